"""The scorer interface, its registry, its config, and the on-disk score cache.

A scorer maps chat messages to raw answer text (or a score); one parser turns text into a score
in [0, 1]. The cache key is (scorer identity - model and adapter hashes or endpoint+model -,
the exact messages, decoding parameters), so reruns and resumes never call the model twice."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Callable, Literal, Optional, Protocol

from toolsense.utils.config import Range
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.paths import atomic_write_text, cache_root
from toolsense.utils.registry import Registry

SCORERS: Registry[Callable[..., "Scorer"]] = Registry("audit scorer")


@dataclass
class ScoreItem:
    id: str
    variant: str
    messages: list[dict]


@dataclass
class ScorerConfig:
    kind: str = "hf"
    """Registered scorer: hf (local causal LM), openai (OpenAI-compatible endpoint), precomputed (file)."""
    adapter: Optional[str] = None
    """hf: a PEFT LoRA adapter folder applied to the model section's checkpoint."""
    method: Optional[Literal["generate", "answer_probs"]] = None
    """hf: generate = greedy answer read by prompt.parser (unparseable answers counted);
    answer_probs = expected answer value (1..10) from each complete answer's probability under
    decoding constrained to the answers, after the parser's answer prefix (continuous, one
    forward pass, never unparseable; "10" is its own answer, not "1").
    None = answer_probs for the fine-tuned demo model, generate otherwise."""
    batch_size: int = 16
    """hf: prompts per generate call."""
    max_new_tokens: int = 16
    """hf, openai: answer length limit (greedy / temperature 0 decoding); hf refuses a limit that
    would cut the parser's longest answer ("<answer>10</answer>")."""
    base_url: Optional[str] = None
    """openai: endpoint root, e.g. http://127.0.0.1:8000/v1."""
    model: Optional[str] = None
    """openai: model name sent to the endpoint."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: NAME of the environment variable holding the key (the key itself is never in config);
    unset is fine for a server on loopback or a private network (a placeholder is sent)."""
    timeout_s: float = 60.0
    max_retries: int = 2
    path: Optional[str] = None
    """precomputed: JSONL of {id, variant, score|text} or {prompt_sha256, score|text}."""
    unparseable_score: Annotated[float, Range(0, 1, why="a score on the 0-1 scale the parsers map answers to")] = 0.5
    """Score given to an answer the parser cannot read (they are counted per variant)."""
    cache: bool = True
    cache_dir: Optional[str] = None
    """Score cache folder; None = $TOOLSENSE_CACHE/audit_scores or ~/.cache/toolsense/audit_scores."""

    def __post_init__(self) -> None:
        SCORERS.get(self.kind)
        if self.kind == "openai" and not (self.base_url and self.model):
            raise ValueError("scorer.kind=openai needs scorer.base_url and scorer.model")
        if self.kind == "precomputed" and not self.path:
            raise ValueError("scorer.kind=precomputed needs scorer.path")
        if self.method not in (None, "generate", "answer_probs"):
            raise ValueError(f"scorer.method must be generate or answer_probs, got {self.method!r}")
        if self.method == "answer_probs" and self.kind != "hf":
            raise ValueError(f"scorer.method=answer_probs needs scorer.kind=hf (got {self.kind})")
        if self.batch_size < 1 or self.max_new_tokens < 1:
            raise ValueError("scorer.batch_size and scorer.max_new_tokens must be >= 1")


class Scorer(Protocol):
    identity: dict
    """What determines the answers besides the prompt (model/adapter hashes, endpoint+model)."""
    decoding: dict
    """Decoding parameters; part of the cache key."""

    def answer(self, items: list[ScoreItem]) -> list[str | float | None]:
        """Per item: raw answer text for the parser, a ready score, or None (no answer)."""


def messages_sha256(messages: list[dict]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def cache_key(scorer: Scorer, messages: list[dict]) -> str:
    blob = json.dumps({"scorer": scorer.identity, "decoding": scorer.decoding, "messages": messages_sha256(messages)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def default_cache_dir(cfg: ScorerConfig) -> Path:
    if cfg.cache_dir:
        return Path(cfg.cache_dir)
    return cache_root() / "audit_scores"


class ScoreCache:
    """``scores.jsonl`` rows {key, answer}; the answer is stored raw so a new parser reuses it."""

    def __init__(self, folder: str | Path | None):
        self.store = JsonlStore(Path(folder) / "scores.jsonl", key="key") if folder else None

    def __contains__(self, key: str) -> bool:
        return self.store is not None and key in self.store

    def get(self, key: str):
        """The cached answer (check ``key in cache`` first: a cached answer may itself be None)."""
        return self.store.get(key)["answer"]

    def put(self, key: str, answer) -> None:
        if self.store is not None:
            self.store.append({"key": key, "answer": answer})

    def scrub(self, scrub: Callable[[dict], dict]) -> int:
        """Rewrite the cache with every row scrubbed (``scrub``: a utils/secrets.py Scrubber), so a
        cache written before answers were scrubbed no longer holds a key an endpoint echoed;
        returns the number of rows that changed (0: the file is left as it is)."""
        if self.store is None:
            return 0
        rows = list(self.store)
        clean = [scrub(r) for r in rows]
        changed = sum(a != b for a, b in zip(rows, clean))
        if changed:
            path = self.store.path
            atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in clean))
            self.store = JsonlStore(path, key="key")
        return changed


def sha256_files(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode())
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()[:16]
