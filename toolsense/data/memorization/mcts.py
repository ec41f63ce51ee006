"""mcts (multi-choice tool selection): the tool's text and K+1 candidate tokens — the gold and
its K nearest tools by encoder cosine over the whole catalog (hard negatives), shuffled with a
seed — in; the gold token out."""

from __future__ import annotations

import random

import numpy as np

from toolsense.catalog import Catalog
from toolsense.data.examples import Example
from toolsense.data.memorization.base import register, token_text, user_messages


def hard_negatives(embeddings: np.ndarray, k: int) -> np.ndarray:
    """``[n, k]`` indices of each row's k most cosine-similar other rows (embeddings L2-normalised),
    most similar first; ties broken by index so the result is deterministic."""
    n = embeddings.shape[0]
    k = min(k, n - 1)
    out = np.empty((n, k), dtype=np.int64)
    if k <= 0:
        return out
    for start in range(0, n, 1024):  # blocks keep memory at 1024 x n for large catalogs
        sim = embeddings[start : start + 1024] @ embeddings.T
        rows = np.arange(start, min(start + 1024, n))
        sim[rows - start, rows] = -np.inf
        out[start : start + len(rows)] = _top_k(-sim, k)
    return out


def _top_k(neg: np.ndarray, k: int) -> np.ndarray:
    """Per row, the indices of the ``k`` smallest values, ascending, ties by index — what a
    stable full argsort's first ``k`` columns are, in O(n) per row (``argpartition``) instead of
    O(n log n): 47k x 47k similarities sort in minutes, partition in seconds. A row whose
    ``k``-th value is tied with values the partition left out takes the full sort."""
    part = np.argpartition(neg, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(neg, part, 1)
    top = np.take_along_axis(part, np.lexsort((part, vals), axis=-1), 1)
    kth = vals.max(axis=1, keepdims=True)
    tied = (neg == kth).sum(1) != (vals == kth).sum(1)
    if tied.any():
        top[tied] = np.argsort(neg[tied], axis=1, kind="stable")[:, :k]
    return top


def tool_embeddings(catalog: Catalog, encoder: str | None) -> np.ndarray:
    """L2-normalised tool-text embeddings from the encoder service (cached on disk: the
    catalog is encoded once for every run, index and format that needs it)."""
    from toolsense.models.encoders import encoder_embeddings

    return encoder_embeddings(catalog, encoder)


@register("mcts", "picks a tool's token among K+1 look-alike tokens (separates near-duplicate tools)")
def build(catalog, index, cfg) -> list[Example]:
    if len(catalog) < 2:
        raise ValueError("memorization format mcts needs a catalog of at least 2 tools")
    neg = hard_negatives(tool_embeddings(catalog, cfg.mcts_encoder), cfg.mcts_negatives)
    rng = random.Random(cfg.seed)
    names = catalog.names
    out = []
    for i, t in enumerate(catalog):
        cands = [t.name] + [names[j] for j in neg[i]]
        rng.shuffle(cands)
        listing = "\n".join(token_text(index, c) for c in cands)
        text = cfg.mcts_template.format(tool_text=t.text(), candidates=listing)
        out.append(Example(user_messages(text, cfg), token_text(index, t.name), "mcts", t.name, meta={"candidates": cands}))
    return out
