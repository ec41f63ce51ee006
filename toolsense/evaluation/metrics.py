"""Retrieval metrics per query, their aggregates, bootstrap intervals and the Internalization Score.

A *ranking* is a list of tool names in rank order; ``None`` marks an output that is not a tool
(free-form decoding can produce text). Gold is the set of canonical tool names of a query.

- hit@k (Rc@k for constrained rankings, Rf@k for free-form): 1 if any gold tool is in the top k.
- recall@k: fraction of the gold tools found in the top k ("full recall" at k = beam width).
- COMP@k (completeness): 1 if *every* gold tool is in the top k; the test that fits multi-answer
  queries (RRB medium / hard: 2-3 and 4-8 gold tools), where hit@k credits one of them.
- R-precision: the fraction of the top |gold| that is gold (= recall at |gold|), one number per
  query that needs no cut-off and scales with the number of answers (trec_eval's ``Rprec``).
- NDCG@k with binary gains; the ideal DCG counts *all* gold tools (min(k, |gold|) ideal hits),
  not only the ones retrieved — a model that finds one of four gold tools does not score 1.
- IS@k = Rf@k / Rc@k, and 0 when Rc@k = 0. Where every free-form hit is also a constrained hit
  (a flat index: the constrained beam covers what free-form finds) IS is the conditional
  proportion P(free hit | constrained hit) and gets a Wilson interval inside [0, 1]; otherwise
  (a pruned hierarchical search) it may exceed 1 and keeps the delta method (see :func:`is_ci`).
  An IS on fewer than ``min_hits`` constrained hits carries ``few_hits: true``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

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


def complete_at(ranking: Ranking, gold: Iterable[str], k: int) -> float:
    """COMP@k: 1.0 if every gold tool is among the top k (``None`` outputs count as misses)."""
    gold = set(gold)
    if not gold:
        raise ValueError("COMP@k is undefined for a query without gold tools")
    return float(gold <= {t for t in ranking[:k] if t is not None})


def r_precision(ranking: Ranking, gold: Iterable[str]) -> float:
    """R-precision: distinct gold tools in the top R = |gold|, divided by R (a tool repeated in
    the ranking is found once; a ranking shorter than R simply finds fewer)."""
    gold = set(gold)
    if not gold:
        raise ValueError("R-precision is undefined for a query without gold tools")
    return recall_at(ranking, gold, len(gold))


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
    """``{prefix}hit@k``, ``{prefix}recall@k``, ``{prefix}ndcg@k``, ``{prefix}comp@k`` for each k
    and ``{prefix}rprec``."""
    out = {}
    for k in ks:
        out[f"{prefix}hit@{k}"] = hit_at(ranking, gold, k)
        out[f"{prefix}recall@{k}"] = recall_at(ranking, gold, k)
        out[f"{prefix}ndcg@{k}"] = ndcg_at(ranking, gold, k)
        out[f"{prefix}comp@{k}"] = complete_at(ranking, gold, k)
    out[f"{prefix}rprec"] = r_precision(ranking, gold)
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


def is_delta_variance(rf: float, rc: float, var_f: float, var_c: float, cov_fc: float) -> float:
    """Delta-method variance of IS = Rf / Rc (first-order Taylor expansion around the means):
    Var(Rf)/Rc² + Rf² Var(Rc)/Rc⁴ − 2 Rf Cov(Rf, Rc)/Rc³. Free-form and constrained hits are
    measured on the same queries and move together, so the covariance term narrows the interval."""
    return var_f / rc**2 + rf**2 * var_c / rc**4 - 2 * rf * cov_fc / rc**3


Z95 = 1.959964


def wilson_ci(hits: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion hits / n: inside [0, 1], and never of zero
    width for n > 0 (3 of 3 gives [0.44, 1.00], not [1, 1]). n = 0 gives (0, 1): no information."""
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def is_ci(f_hits: Sequence[float], c_hits: Sequence[float], idx: np.ndarray, z: float = Z95,
          min_hits: int = 10) -> dict[str, Any]:
    """IS@k with a 95% interval, from per-query free-form and constrained hits (0/1).

    Where no query has a free-form hit without a constrained one (always so for a flat index),
    IS = #free hits / #constrained hits is P(free hit | constrained hit): a binomial proportion
    over the constrained hits, with its Wilson interval (``method: wilson``). Otherwise IS may
    exceed 1 and the interval is the delta method: Var(Rf), Var(Rc), Cov(Rf, Rc) of the two means
    over the *same* bootstrap resamples ``idx`` (ddof 1) in :func:`is_delta_variance`, IS ± z·se
    cut at 0 below (``method: delta``). Returns ``{value, lo, hi, method, hits, few_hits}``:
    ``hits`` the constrained hits it rests on, ``few_hits`` when they are fewer than ``min_hits``
    (such an IS is shown flagged and used for no verdict). Rc = 0: IS 0 on [0, 1], no information."""
    f = np.asarray(f_hits, dtype=np.float64)
    c = np.asarray(c_hits, dtype=np.float64)
    rf, rc, hits = float(f.mean()), float(c.mean()), float(c.sum())
    tail = {"hits": int(round(hits)), "few_hits": hits < min_hits}
    if rc == 0:
        return {"value": 0.0, "lo": 0.0, "hi": 1.0, "method": "none", **tail}
    if not np.any(f > c):
        lo, hi = wilson_ci(float(f.sum()), hits, z)
        return {"value": float(f.sum() / hits), "lo": lo, "hi": hi, "method": "wilson", **tail}
    mf, mc = f[idx].mean(axis=1), c[idx].mean(axis=1)
    cov = np.cov(mf, mc, ddof=1) if len(mf) > 1 else np.zeros((2, 2))
    se = math.sqrt(max(is_delta_variance(rf, rc, cov[0, 0], cov[1, 1], cov[0, 1]), 0.0))
    value = internalization_score(rf, rc)
    return {"value": value, "lo": max(0.0, value - z * se), "hi": value + z * se, "method": "delta", **tail}


def aggregate(rows: Sequence[dict[str, float]], ks: Sequence[int], resamples: int = 1000, seed: int = 0,
              with_free: bool = True, min_hits: int = 10) -> dict[str, dict[str, Any]]:
    """Means and 95% bootstrap intervals of every per-item metric in ``rows`` (keys as produced
    by :func:`item_metrics` with prefixes ``c_`` and ``f_``), plus ``IS@k`` by :func:`is_ci`
    (Wilson, or the delta method over the same resamples; flagged under ``min_hits`` hits).

    Returns ``{metric: {value, lo, hi}}`` with metric names ``Rc@k``, ``Rf@k``, ``IS@k``,
    ``recall_c@k``, ``recall_f@k``, ``ndcg_c@k``, ``ndcg_f@k``, and, where every row has them
    (samples written before COMP / R-precision existed do not), ``COMPc@k``, ``COMPf@k``,
    ``Rprec_c``, ``Rprec_f``.
    """
    if not rows:
        return {}
    idx = bootstrap_indices(len(rows), resamples, seed)
    out: dict[str, dict[str, float]] = {}
    systems = [("c", "Rc")] + ([("f", "Rf")] if with_free else [])
    for k in ks:
        hits = {}
        for p, name in systems:
            hits[p] = [r[f"{p}_hit@{k}"] for r in rows]
            out[f"{name}@{k}"] = mean_ci(hits[p], idx).to_dict()
            out[f"recall_{p}@{k}"] = mean_ci([r[f"{p}_recall@{k}"] for r in rows], idx).to_dict()
            out[f"ndcg_{p}@{k}"] = mean_ci([r[f"{p}_ndcg@{k}"] for r in rows], idx).to_dict()
            if all(f"{p}_comp@{k}" in r for r in rows):
                out[f"COMP{p}@{k}"] = mean_ci([r[f"{p}_comp@{k}"] for r in rows], idx).to_dict()
        if with_free:
            out[f"IS@{k}"] = is_ci(hits["f"], hits["c"], idx, min_hits=min_hits)
    for p, _ in systems:
        if all(f"{p}_rprec" in r for r in rows):
            out[f"Rprec_{p}"] = mean_ci([r[f"{p}_rprec"] for r in rows], idx).to_dict()
    return out


def accuracy(correct: Sequence[bool], resamples: int = 1000, seed: int = 0) -> dict[str, float]:
    """Probe accuracy with its bootstrap interval."""
    idx = bootstrap_indices(len(correct), resamples, seed)
    return mean_ci([float(c) for c in correct], idx).to_dict()
