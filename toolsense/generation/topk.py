"""Top-k cosine search over row blocks, for candidate pools at catalog scale (47k+ tools):
memory is ``block × N`` scores at a time instead of ``N × N``."""

from __future__ import annotations

import numpy as np


def top_k_cosine(queries: np.ndarray, keys: np.ndarray, k: int, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(Q, k)`` of the ``k`` key rows most similar to each query row (inner product;
    pass L2-normalised rows for cosine) and their scores, best first; equal scores are ordered
    by lower index. ``np.argpartition`` per block of ``block`` query rows, then a sort of the
    ``k`` survivors only."""
    if k < 1 or k > len(keys):
        raise ValueError(f"k must be in 1..{len(keys)} (the number of keys), got {k}")
    idx = np.empty((len(queries), k), dtype=np.int64)
    val = np.empty((len(queries), k), dtype=np.float32)
    for start in range(0, len(queries), block):
        scores = queries[start : start + block] @ keys.T
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < len(keys) else np.tile(np.arange(len(keys)), (len(scores), 1))
        top = np.take_along_axis(scores, part, axis=1)
        order = np.lexsort((part, -top), axis=1)
        idx[start : start + block] = np.take_along_axis(part, order, axis=1)
        val[start : start + block] = np.take_along_axis(top, order, axis=1)
    return idx, val
