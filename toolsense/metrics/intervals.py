"""Aggregates of per-item metrics with their 95% intervals: a mean with its percentile bootstrap
over items, a probe's accuracy, and IS@k = Rf@k / Rc@k. Where every free-form hit is also a
constrained hit (a flat index: the constrained beam covers what free-form finds) IS is the
conditional proportion P(free hit | constrained hit) and gets a Wilson interval inside [0, 1];
otherwise (a pruned hierarchical search) it may exceed 1 and keeps the delta method (see
:func:`is_ci`). An IS on fewer than ``min_hits`` constrained hits carries ``few_hits: true``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from toolsense.metrics.ranking import internalization_score


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


def accuracy(correct: Sequence[bool], resamples: int = 1000, seed: int = 0) -> dict[str, float]:
    """Probe accuracy with its bootstrap interval."""
    idx = bootstrap_indices(len(correct), resamples, seed)
    return mean_ci([float(c) for c in correct], idx).to_dict()
