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
    for start in range(0, n, 1024):  # blocks keep memory at 1024 x n for large catalogs
        sim = embeddings[start : start + 1024] @ embeddings.T
        rows = np.arange(start, min(start + 1024, n))
        sim[rows - start, rows] = -np.inf
        order = np.argsort(-sim, axis=1, kind="stable")
        out[start : start + len(rows)] = order[:, :k]
    return out


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
