"""Non-parametric baselines over the tools' text (a registry): BM25 (bm25s), dense retrieval
with sentence-transformers (default: the embedded MiniLM; any local model path), and OpenAI
embeddings (key from ``OPENAI_API_KEY`` only). Each ranks the whole catalog for a query and
yields the same :class:`Retrieved` records as parametric retrieval, so outputs line up."""

from __future__ import annotations

import os
from typing import Callable, Iterator, Sequence

import numpy as np

from toolsense.catalog import Catalog, Query
from toolsense.evaluation.config import BaselineConfig
from toolsense.evaluation.retrieval import Retrieved
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


def _unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)


def embedding_ranker(catalog: Catalog, top: int, batch_size: int, embed: Callable[[list[str]], np.ndarray]) -> Ranker:
    """Cosine similarity between query and tool-text embeddings from ``embed``."""
    tool_emb = _unit(embed([t.text() for t in catalog]))
    return Ranker(catalog, top, batch_size, lambda texts: _unit(embed(list(texts))) @ tool_emb.T)


@BASELINES.register("bm25")
def bm25(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    """Okapi BM25 (bm25s defaults, English stopwords) over each tool's text."""
    import bm25s

    model = bm25s.BM25()
    model.index(bm25s.tokenize([t.text() for t in catalog], stopwords="en", show_progress=False), show_progress=False)

    def score(texts: Sequence[str]) -> np.ndarray:
        toks = bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)
        return np.stack([model.get_scores(t) for t in toks])

    return Ranker(catalog, top, cfg.batch_size, score)


@BASELINES.register("dense")
def dense(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    from toolsense.models.encoders import load_encoder

    enc = load_encoder(cfg.encoder)
    return embedding_ranker(catalog, top, cfg.batch_size,
                            lambda texts: enc.encode(texts, batch_size=cfg.batch_size, show_progress_bar=False))


@BASELINES.register("openai")
def openai_embeddings(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    """OpenAI embeddings; the key is read from OPENAI_API_KEY (and OPENAI_BASE_URL if set) only."""
    if not os.environ.get("OPENAI_API_KEY"):
        raise RuntimeError("baseline kind=openai needs OPENAI_API_KEY in the environment")
    from openai import OpenAI

    client = OpenAI()
    model = cfg.encoder or "text-embedding-3-small"

    def embed(texts: list[str]) -> np.ndarray:
        out = []
        for i in range(0, len(texts), 256):
            resp = client.embeddings.create(model=model, input=texts[i : i + 256])
            out.extend(d.embedding for d in resp.data)
        return np.asarray(out, dtype=np.float32)

    return embedding_ranker(catalog, top, cfg.batch_size, embed)


def build_baseline(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    return BASELINES.get(cfg.kind)(catalog, cfg, top)
