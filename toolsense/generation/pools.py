"""Hard-negative neighbourhoods over a catalog by encoder cosine similarity."""

from __future__ import annotations

import numpy as np

from toolsense.catalog import Catalog


class Neighbourhoods:
    """Cosine neighbours of every tool by what its API does (service text excluded, since
    every API of a service shares it and would make all neighbours same-service)."""

    def __init__(self, catalog: Catalog, encoder: str | None = None, embeddings: np.ndarray | None = None):
        self.catalog = catalog
        if embeddings is None:  # the API text (template api_text), encoded once and cached on disk
            from toolsense.models.encoders import encoder_embeddings

            embeddings = encoder_embeddings(catalog, encoder, template="api_text")
        self.emb = np.asarray(embeddings, dtype=np.float32)

    def similarity(self, a: str, b: str) -> float:
        return float(self.emb[self.catalog.index_of(a)] @ self.emb[self.catalog.index_of(b)])

    def nearest(self, name: str, k: int, exclude: set[str] | frozenset = frozenset(), other_service: bool = False) -> list[str]:
        i = self.catalog.index_of(name)
        order = np.argsort(-(self.emb @ self.emb[i]), kind="stable")
        svc = self.catalog[name].service
        out = []
        for j in order:
            cand = self.catalog[int(j)]
            if j == i or cand.name in exclude or (other_service and cand.service == svc):
                continue
            out.append(cand.name)
            if len(out) == k:
                break
        return out

    def pool(self, gold: list[str], size: int, rng: np.random.Generator) -> list[str]:
        """``size`` candidates: the gold tools plus the hardest negatives (nearest to any gold), shuffled."""
        if len(gold) > size:
            raise ValueError(f"pool size {size} is smaller than the {len(gold)} gold tools")
        scores = np.max(self.emb @ self.emb[[self.catalog.index_of(g) for g in gold]].T, axis=1)
        negs = [self.catalog[int(j)].name for j in np.argsort(-scores, kind="stable") if self.catalog[int(j)].name not in gold]
        cands = list(gold) + negs[: size - len(gold)]
        rng.shuffle(cands)
        return cands
