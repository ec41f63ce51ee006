"""Duplicate probe questions: exact (normalised text) and near (sentence-embedding cosine at or
above a threshold, by default the embedded MiniLM) among the questions accepted so far."""

from __future__ import annotations

import threading
from typing import Callable, Iterable

import numpy as np

from toolsense.generation.checks import normalise

Encode = Callable[[list[str]], np.ndarray]


def minilm_encoder(name: str | None = None) -> Encode:
    """``texts -> L2-normalised rows`` by :func:`toolsense.models.encoders.load_encoder`."""
    from toolsense.models.encoders import load_encoder

    model = load_encoder(name)
    return lambda texts: np.asarray(model.encode(texts, normalize_embeddings=True), dtype=np.float32)


class QuestionDeduper:
    """``reason(q)`` says why ``q`` duplicates an accepted question (None if it does not);
    ``add(q)`` records an accepted one. Thread-safe; ``encode=None`` checks exact text only."""

    def __init__(self, encode: Encode | None, threshold: float, accepted: Iterable[str] = ()):
        self.encode, self.threshold = encode, threshold
        self.norms: set[str] = set()
        self.texts: list[str] = []
        self.emb = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.Lock()
        accepted = list(accepted)
        if accepted:
            self._add_many(accepted)

    def _add_many(self, questions: list[str]) -> None:
        with self._lock:
            self.norms.update(normalise(q) for q in questions)
            self.texts += questions
            if self.encode is not None:
                vecs = self.encode(questions)
                self.emb = vecs if not len(self.emb) else np.vstack([self.emb, vecs])

    def add(self, question: str) -> None:
        self._add_many([question])

    def reason(self, question: str) -> str | None:
        if normalise(question) in self.norms:
            return "duplicate question"
        if self.encode is None or not len(self.emb):
            return None
        with self._lock:
            sims = self.emb @ self.encode([question])[0]
        j = int(np.argmax(sims))
        if sims[j] >= self.threshold:
            return f"near-duplicate question (cosine {sims[j]:.2f} to {self.texts[j]!r})"
        return None
