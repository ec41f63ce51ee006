"""Retrieval metrics per query, their aggregates, bootstrap intervals and the Internalization Score.

A *ranking* is a list of tool names in rank order; ``None`` marks an output that is not a tool
(free-form decoding can produce text). Gold is the set of canonical tool names of a query.

- hit@k (Rc@k for constrained rankings, Rf@k for free-form): 1 if any gold tool is in the top k.
- recall@k: fraction of the gold tools found in the top k ("full recall" at k = beam width).
- NDCG@k with binary gains; the ideal DCG counts *all* gold tools (min(k, |gold|) ideal hits),
  not only the ones retrieved — a model that finds one of four gold tools does not score 1.
- IS@k = Rf@k / Rc@k, and 0 when Rc@k = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

Ranking = Sequence[str | None]


def hit_at(ranking: Ranking, gold: Iterable[str], k: int) -> float:
    gold = set(gold)
    return float(any(t in gold for t in ranking[:k] if t is not None))


def recall_at(ranking: Ranking, gold: Iterable[str], k: int) -> float:
    gold = set(gold)
    if not gold:
        raise ValueError("recall is undefined for a query without gold tools")
    found = {t for t in ranking[:k] if t is not None and t in gold}
    return len(found) / len(gold)


def ndcg_at(ranking: Ranking, gold: Iterable[str], k: int) -> float:
    gold = set(gold)
    if not gold:
        raise ValueError("NDCG is undefined for a query without gold tools")
    seen: set[str] = set()
    dcg = 0.0
    for i, t in enumerate(ranking[:k]):
        if t is not None and t in gold and t not in seen:  # a repeated tool earns no second gain
            seen.add(t)
            dcg += 1.0 / math.log2(i + 2)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / idcg


def internalization_score(rf: float, rc: float) -> float:
    """IS = Rf / Rc; defined as 0 when Rc = 0 (nothing to internalise was retrieved)."""
    return 0.0 if rc == 0 else rf / rc


def item_metrics(ranking: Ranking, gold: Sequence[str], ks: Sequence[int], prefix: str) -> dict[str, float]:
    """``{prefix}hit@k``, ``{prefix}recall@k``, ``{prefix}ndcg@k`` for each k."""
    out = {}
    for k in ks:
        out[f"{prefix}hit@{k}"] = hit_at(ranking, gold, k)
        out[f"{prefix}recall@{k}"] = recall_at(ranking, gold, k)
        out[f"{prefix}ndcg@{k}"] = ndcg_at(ranking, gold, k)
    return out


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95% interval."""

    value: float
    lo: float
    hi: float

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "lo": self.lo, "hi": self.hi}


def bootstrap_indices(n: int, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """``[resamples, n]`` query indices drawn with replacement; one draw shared by every metric
    of a run so that their intervals (and the IS delta method) refer to the same resamples."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def mean_ci(values: Sequence[float], idx: np.ndarray, alpha: float = 0.05) -> Estimate:
    """Mean with a percentile bootstrap interval over the resamples ``idx``."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        return Estimate(float("nan"), float("nan"), float("nan"))
    means = v[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return Estimate(float(v.mean()), float(lo), float(hi))


def is_ci(rf: Estimate, rc: Estimate, z: float = 1.959964) -> Estimate:
    """IS with a delta-method interval from the intervals of Rf and Rc.

    Each standard error is read off its 95% interval (width / 2z); Var(IS) ≈ se_f²/Rc² +
    Rf² se_c²/Rc⁴. The covariance of Rf and Rc is left out: they are positively correlated and
    enter with a minus sign, so leaving it out widens the interval (conservative). Clipped to [0, 1].
    """
    value = internalization_score(rf.value, rc.value)
    if rc.value == 0:
        return Estimate(0.0, 0.0, 0.0)
    se_f = (rf.hi - rf.lo) / (2 * z)
    se_c = (rc.hi - rc.lo) / (2 * z)
    se = math.sqrt(se_f**2 / rc.value**2 + rf.value**2 * se_c**2 / rc.value**4)
    return Estimate(value, max(0.0, value - z * se), min(1.0, value + z * se))


def aggregate(rows: Sequence[dict[str, float]], ks: Sequence[int], resamples: int = 1000, seed: int = 0,
              with_free: bool = True) -> dict[str, dict[str, float]]:
    """Means and 95% bootstrap intervals of every per-item metric in ``rows`` (keys as produced
    by :func:`item_metrics` with prefixes ``c_`` and ``f_``), plus ``IS@k`` by the delta method.

    Returns ``{metric: {value, lo, hi}}`` with metric names ``Rc@k``, ``Rf@k``, ``IS@k``,
    ``recall_c@k``, ``recall_f@k``, ``ndcg_c@k``, ``ndcg_f@k``.
    """
    if not rows:
        return {}
    idx = bootstrap_indices(len(rows), resamples, seed)
    out: dict[str, dict[str, float]] = {}
    systems = [("c", "Rc")] + ([("f", "Rf")] if with_free else [])
    for k in ks:
        est = {}
        for p, name in systems:
            est[p] = mean_ci([r[f"{p}_hit@{k}"] for r in rows], idx)
            out[f"{name}@{k}"] = est[p].to_dict()
            out[f"recall_{p}@{k}"] = mean_ci([r[f"{p}_recall@{k}"] for r in rows], idx).to_dict()
            out[f"ndcg_{p}@{k}"] = mean_ci([r[f"{p}_ndcg@{k}"] for r in rows], idx).to_dict()
        if with_free:
            out[f"IS@{k}"] = is_ci(est["f"], est["c"]).to_dict()
    return out


def accuracy(correct: Sequence[bool], resamples: int = 1000, seed: int = 0) -> dict[str, float]:
    """Probe accuracy with its bootstrap interval."""
    idx = bootstrap_indices(len(correct), resamples, seed)
    return mean_ci([float(c) for c in correct], idx).to_dict()
