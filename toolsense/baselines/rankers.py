"""Non-parametric baselines over the tools' text (a registry): BM25 (bm25s or Okapi), dense retrieval
with sentence-transformers (default: the embedded MiniLM; any local model path), and embeddings from OpenAI
or any OpenAI-compatible server (``baseline.base_url``; the key from ``$baseline.api_key_env`` only); the
catalog side of the embedding baselines is encoded once and cached on disk by ``toolsense.models.encoders``.
Each ranks the whole catalog for a query and yields the same :class:`Retrieved` records as parametric retrieval, so outputs line up.

What a baseline indexes is its config: ``baseline.document`` (a text template,
``toolsense/models/encoders/documents.py``), and for BM25 ``baseline.tokenizer`` and
``baseline.scorer`` (registries of ``bm25.py``); ``conf/baseline/bm25_toolgen.yaml`` rebuilds ToolGen's."""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import numpy as np

from toolsense.baselines.bm25 import BM25_SCORERS, BM25_TOKENIZERS
from toolsense.baselines.config import BaselineConfig
from toolsense.catalog import Catalog, Query
from toolsense.decoding.retrieval import Retrieved
from toolsense.utils.registry import Registry

ScoreFn = Callable[[Sequence[str]], np.ndarray]


class Ranker:
    """Ranks the catalog's tools for each query by ``score_fn(texts) -> [n_queries, n_tools]``."""

    def __init__(self, catalog: Catalog, top: int, batch_size: int, score_fn: ScoreFn):
        self.names = catalog.names
        self.top = min(top, len(self.names))
        self.batch_size = batch_size
        self.score_fn = score_fn

    def run(self, queries: Sequence[Query]) -> Iterator[Retrieved]:
        for start in range(0, len(queries), self.batch_size):
            chunk = queries[start : start + self.batch_size]
            s = np.asarray(self.score_fn([q.text for q in chunk]), dtype=np.float64)
            order = np.argsort(-s, axis=1, kind="stable")[:, : self.top]
            for q, row, srow in zip(chunk, order, s):
                yield Retrieved(q, None, [{"tool": self.names[i], "score": round(float(srow[i]), 5)} for i in row], None)


BASELINES: Registry[Callable[[Catalog, BaselineConfig, int], Ranker]] = Registry("baseline")


OPENAI_DEFAULT_MODEL = "text-embedding-3-large"
"""The paper's te3l."""


def _unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)


def embedding_ranker(catalog: Catalog, top: int, batch_size: int, embedder, document: str = "tool_text") -> Ranker:
    """Cosine similarity between query embeddings (encoded per batch; an endpoint's cached) and the
    catalog's ``document`` embeddings (from the encoder service's disk cache, keyed by the
    template too: encoded once per document format)."""
    from toolsense.models.encoders import catalog_embeddings

    tool_emb = catalog_embeddings(catalog, embedder, document)
    return Ranker(catalog, top, batch_size, lambda texts: _unit(embedder.encode(list(texts))) @ tool_emb.T)


@BASELINES.register("bm25")
def bm25(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    """BM25 over each tool's ``cfg.document`` text, split by ``cfg.tokenizer``, scored by
    ``cfg.scorer`` (defaults: ``tool_text``, bm25s' English tokenizer, bm25s' Lucene BM25)."""
    from toolsense.models.encoders import TEXT_TEMPLATES

    template = TEXT_TEMPLATES.get(cfg.document)
    tokenize = BM25_TOKENIZERS.get(cfg.tokenizer)
    score = BM25_SCORERS.get(cfg.scorer)(tokenize([template(t) for t in catalog]))
    return Ranker(catalog, top, cfg.batch_size, lambda texts: score(tokenize(texts)))


@BASELINES.register("dense")
def dense(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    """A local sentence encoder (default the embedded MiniLM) on ``cfg.backend``."""
    from toolsense.models.encoders import SentenceEncoder

    return embedding_ranker(catalog, top, cfg.batch_size, SentenceEncoder(cfg.encoder, cfg.backend, cfg.encode_batch_size),
                            cfg.document)


@BASELINES.register("openai")
def openai_embeddings(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    """Embeddings from OpenAI (default text-embedding-3-large) or any OpenAI-compatible server at ``cfg.base_url``
    (the key from ``$cfg.api_key_env`` only), ``cfg.encode_batch_size`` texts a request; every batch is cached keyed
    by (URL, model, texts), so a rerun sends nothing it has sent before (``models/encoders/remote.py``: also the
    mean pooling of a server's per-token replies)."""
    from toolsense.endpoints.client import Endpoint
    from toolsense.models.encoders import OpenAIEmbedder

    endpoint = Endpoint("baseline", cfg.base_url, cfg.api_key_env, cfg.max_retries, cfg.timeout_s, cfg.max_connection_failures)
    model = cfg.encoder or OPENAI_DEFAULT_MODEL
    endpoint.served_model(model, "baseline.encoder")
    return embedding_ranker(catalog, top, cfg.batch_size, OpenAIEmbedder(endpoint, model, cfg.encode_batch_size), cfg.document)


def build_baseline(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    return BASELINES.get(cfg.kind)(catalog, cfg, top)
