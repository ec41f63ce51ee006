"""Embedders: one interface (``identity`` + ``encode(texts) -> float32 [n, d]``) over local
sentence-transformers models and OpenAI-compatible embedding endpoints (``remote.py``), so one cache serves both."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Protocol, Sequence

import numpy as np
from tqdm.auto import tqdm

from toolsense.models.encoders.loading import Backend, encoder_identity, load_encoder
from toolsense.utils.progress import heartbeat


class Embedder(Protocol):
    identity: str
    """Stable name of the model (and backend) that goes into the cache key."""

    def encode(self, texts: Sequence[str], progress: bool = False, chunk_done: Callable[[int, np.ndarray], None] | None = None,
               skip: Callable[[int], np.ndarray | None] | None = None) -> np.ndarray: ...


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> Iterator[np.ndarray]:
    """Indices grouped into batches of similar length (longest first), so a batch pads to
    nearly its own texts' length; callers write each batch's rows back to these indices."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def encode_batched(texts: Sequence[str], embed_batch: Callable[[list[str]], np.ndarray], batch_size: int, lengths: Sequence[int],
                   progress: bool, desc: str, chunk_done=None, skip=None) -> np.ndarray:
    """Embeds ``texts`` in length-sorted batches and returns rows in the input order. Batch i's
    rows are handed to ``chunk_done(i, rows)`` (for incremental checkpoints) and skipped when
    ``skip(i)`` already returns them (a resumed run). The bar is redrawn every few seconds while a
    batch encodes (a batch of 256 long tool texts takes ~10-20 s on a loaded CPU), so the log never
    goes silent."""
    out: np.ndarray | None = None
    with tqdm(total=len(texts), desc=desc, unit="text", disable=not progress, dynamic_ncols=True) as bar, heartbeat(bar):
        for i, idx in enumerate(length_sorted_batches(lengths, batch_size)):
            rows = skip(i) if skip is not None else None
            if rows is None:
                rows = np.asarray(embed_batch([texts[j] for j in idx]), dtype=np.float32)
                if chunk_done is not None:
                    chunk_done(i, rows)
            if out is None:
                out = np.empty((len(texts), rows.shape[1]), dtype=np.float32)
            out[idx] = rows
            bar.update(len(idx))
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


class SentenceEncoder:
    """A local sentence-transformers model. ``encode`` sorts texts by length into batches (less
    padding), shows a tqdm bar with ETA and returns float32 rows in the input order, raw
    (normalisation is the cache's business)."""

    def __init__(self, name_or_path: str | None = None, backend: Backend = "torch", batch_size: int = 256, device: str | None = None):
        if batch_size < 1:
            raise ValueError(f"encoder batch_size must be >= 1, got {batch_size}")
        self.name_or_path, self.backend, self.batch_size, self.device = name_or_path, backend, batch_size, device
        self.identity = f"{encoder_identity(name_or_path)}|{backend}"
        self._model: Any = None

    @property
    def model(self):
        if self._model is None:
            self._model = load_encoder(self.name_or_path, self.device, self.backend)
        return self._model

    def encode(self, texts: Sequence[str], progress: bool = False, chunk_done=None, skip=None) -> np.ndarray:
        lengths = [len(t) for t in texts]  # characters: what sentence-transformers sorts by, no tokenizer pass
        return encode_batched(texts, self._embed_batch, self.batch_size, lengths, progress, f"encode {self.backend}", chunk_done, skip)

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        return self.model.encode(batch, batch_size=len(batch), show_progress_bar=False, convert_to_numpy=True)
