"""MCTS hard negatives by ``argpartition`` (O(n) per row) are exactly what the full stable sort
gave: most similar first, ties broken by index, the tool itself never among them."""

from __future__ import annotations

import numpy as np
import pytest

from toolsense.data.memorization.mcts import hard_negatives


def _by_full_sort(emb: np.ndarray, k: int) -> np.ndarray:
    n = emb.shape[0]
    sim = emb @ emb.T
    sim[np.arange(n), np.arange(n)] = -np.inf
    return np.argsort(-sim, axis=1, kind="stable")[:, : min(k, n - 1)]


@pytest.mark.parametrize("k", [1, 3, 10, 299, 500])
def test_partition_equals_the_stable_sort_with_ties(k):
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(300, 6)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    emb[[5, 9, 40]] = emb[7]  # exact duplicates: tied similarities at every cut
    emb[100:110] = emb[100]
    got = hard_negatives(emb, k)
    assert np.array_equal(got, _by_full_sort(emb, k))
    assert not (got == np.arange(300)[:, None]).any()
    if k >= 3:
        assert list(got[7, :3]) == [5, 9, 40]  # the duplicates first, in index order


def test_hand_computed_neighbours():
    emb = np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0]], dtype=np.float32)
    assert hard_negatives(emb, 2).tolist() == [[1, 2], [0, 2], [1, 0], [2, 1]]
    assert hard_negatives(emb[:1], 3).shape == (1, 0)
