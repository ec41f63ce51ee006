"""A baseline's config section (``baseline=<name>``, ``conf/baseline/*.yaml``; a suite's ``baselines``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from toolsense.baselines.bm25 import BM25_SCORERS, BM25_TOKENIZERS
from toolsense.models.encoders import TEXT_TEMPLATES


@dataclass
class BaselineConfig:
    kind: Literal["bm25", "dense", "openai"] = "bm25"
    """bm25 (bm25s over the tools' text), dense (sentence-transformers), openai (embeddings API)."""
    encoder: Optional[str] = None
    """dense: a local SentenceTransformer path (None = embedded all-MiniLM-L6-v2);
    openai: the embedding model name sent to the endpoint (None = text-embedding-3-large, the paper's te3l),
    checked against the ids its ``GET /v1/models`` lists where it lists any."""
    base_url: Optional[str] = None
    """openai only: an OpenAI-compatible endpoint serving embeddings (llama.cpp's server with ``--embedding``, vLLM,
    Ollama: ``http://127.0.0.1:8080/v1``); None = OpenAI (or ``$OPENAI_BASE_URL``). Part of the cache key and of the
    fingerprint."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai only: NAME of the environment variable holding the key (the key itself never goes in config); unset is
    fine for a server on loopback or a private network (toolsense/utils/secrets.py)."""
    max_retries: int = 6
    """openai only: retries of a request on rate limits (after its Retry-After), server errors and time-outs."""
    timeout_s: float = 120.0
    """openai only: seconds before one request times out (then it is retried)."""
    max_connection_failures: int = 4
    """openai only: requests in a row that cannot reach the endpoint before the job stops in one line (the batches
    embedded so far are cached: a rerun resumes)."""
    backend: Literal["torch", "int8", "onnx"] = "torch"
    """dense only: torch = exact fp32; int8 = dynamic int8 quantisation of the Linear layers
    (CPU, faster, slightly different scores); onnx = sentence-transformers' ONNX backend
    (needs optimum[onnxruntime]). Part of the embedding cache key."""
    batch_size: int = 64
    """Queries scored per batch."""
    encode_batch_size: int = 256
    """dense/openai: tool texts per encoder batch (length-sorted) when the catalog is encoded."""
    label: Optional[str] = None
    """Row name in tables; default the kind."""
    document: str = "tool_text"
    """What each tool's document holds: a text template (``TEXT_TEMPLATES``; ``tool_text``,
    ``api_text``, ``toolgen`` = ToolGen's/ToolBench's corpus document, ``names``), listed with
    their fields in ``toolsense/models/encoders/documents.py``. Part of the embedding cache key."""
    tokenizer: str = "bm25s_en"
    """bm25 only (``BM25_TOKENIZERS``): ``bm25s_en`` (bm25s' words of 2+ characters, English
    stopwords out) or ``words`` (lower-cased words and punctuation, all kept: ToolGen's NLTK split)."""
    scorer: str = "bm25s"
    """bm25 only (``BM25_SCORERS``): ``bm25s`` (Lucene BM25) or ``okapi`` (rank_bm25's
    ``BM25Okapi``, ToolGen's: k1 1.5, b 0.75, epsilon 0.25 for frequent terms)."""

    def __post_init__(self) -> None:
        self.document = TEXT_TEMPLATES.check(self.document, "baseline.document")
        self.tokenizer = BM25_TOKENIZERS.check(self.tokenizer, "baseline.tokenizer")
        self.scorer = BM25_SCORERS.check(self.scorer, "baseline.scorer")
        if self.kind != "bm25" and (self.tokenizer, self.scorer) != ("bm25s_en", "bm25s"):
            raise ValueError(f"baseline.tokenizer and baseline.scorer apply to kind=bm25 only, not kind={self.kind}")
        if self.backend not in ("torch", "int8", "onnx"):
            raise ValueError(f"baseline.backend must be torch, int8 or onnx, got {self.backend!r}")
        if self.backend != "torch" and self.kind != "dense":
            raise ValueError(f"baseline.backend={self.backend} applies to kind=dense only, not kind={self.kind}")
        if self.kind != "openai" and (self.base_url, self.api_key_env) != (None, "OPENAI_API_KEY"):
            raise ValueError(f"baseline.base_url and baseline.api_key_env apply to kind=openai only, not kind={self.kind}")
        if self.timeout_s <= 0 or self.max_connection_failures < 1:
            raise ValueError(f"baseline.timeout_s must be > 0 and baseline.max_connection_failures >= 1, "
                             f"got {self.timeout_s}, {self.max_connection_failures}")
        if self.batch_size < 1 or self.encode_batch_size < 1:
            raise ValueError(f"baseline.batch_size and baseline.encode_batch_size must be >= 1, "
                             f"got {self.batch_size}, {self.encode_batch_size}")

    def identity(self) -> dict[str, Optional[str]]:
        """What the baseline's rankings depend on (its fingerprint): kind and encoder, plus the
        document, tokenizer, scorer and endpoint where they differ from the defaults (so folders written
        before these settings existed still resume)."""
        out: dict[str, Optional[str]] = {"kind": self.kind, "encoder": self.encoder}
        for name, default in (("document", "tool_text"), ("tokenizer", "bm25s_en"), ("scorer", "bm25s"), ("base_url", None)):
            if getattr(self, name) != default:
                out[name] = getattr(self, name)
        return out
