"""The paper's statistics over finished evaluations, as pure functions on plain numbers (compare.py
and annotate.py feed them from results.json / samples.jsonl / filled rating sheets).

- :func:`mean_sd` — a configuration's mean and sample standard deviation over seeds.
- :func:`pooled_bootstrap` — a 95% interval over seeds *and* queries: the per-query values of
  every seed are pooled (one observation per seed × query) and resampled with replacement.
- :func:`paired_bootstrap_diff` — knowledge retention: accuracy after Stage 2 minus after Stage 1
  with a 95% interval from resampling the *paired* probe items (the same item under both).
- :func:`cohens_d` — standardised difference of two groups with the pooled standard deviation.
- :func:`fleiss_kappa` — agreement of a fixed number of raters per item over categories.
- :func:`drift_ratio` — relative drift of the virtual rows over that of the base-vocabulary rows.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def mean_sd(values: Sequence[float]) -> tuple[float, float | None]:
    """(mean, sample sd with ddof=1); the sd is None for a single value (no spread to estimate)."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        raise ValueError("mean_sd of no values")
    return float(v.mean()), (float(v.std(ddof=1)) if len(v) > 1 else None)


def _percentile(draws: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def pooled_bootstrap(groups: Sequence[Sequence[float]], resamples: int = 1000, seed: int = 0,
                     denominators: Sequence[Sequence[float]] | None = None) -> dict[str, float]:
    """Mean of the pooled per-query values of every seed (``groups``: one list per seed) with a
    95% percentile interval over ``resamples`` draws of the pooled observations. With
    ``denominators`` (the same shape: e.g. constrained hits beside free-form hits) the statistic
    is the ratio of the two pooled means (IS = Rf / Rc, 0 when Rc = 0), both resampled together."""
    num = np.concatenate([np.asarray(g, dtype=np.float64) for g in groups])
    if len(num) == 0:
        raise ValueError("pooled_bootstrap of no observations")
    idx = np.random.default_rng(seed).integers(0, len(num), size=(resamples, len(num)))
    if denominators is None:
        return {"value": float(num.mean()), **dict(zip(("lo", "hi"), _percentile(num[idx].mean(axis=1))))}
    den = np.concatenate([np.asarray(g, dtype=np.float64) for g in denominators])
    if len(den) != len(num):
        raise ValueError(f"pooled_bootstrap: {len(num)} numerators but {len(den)} denominators")
    dm = den[idx].mean(axis=1)
    draws = np.divide(num[idx].mean(axis=1), dm, out=np.zeros_like(dm), where=dm > 0)
    value = float(num.mean() / den.mean()) if den.mean() > 0 else 0.0
    return {"value": value, **dict(zip(("lo", "hi"), _percentile(draws)))}


def paired_bootstrap_diff(before: Sequence[float], after: Sequence[float], resamples: int = 1000,
                          seed: int = 0) -> dict[str, float]:
    """``mean(after) − mean(before)`` over paired items (position i is the same item in both)
    with a 95% percentile interval from resampling items — each draw keeps both measurements of
    an item together, so the item-to-item variation shared by both stages cancels."""
    a, b = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"paired_bootstrap_diff needs equally many paired items (got {len(a)} and {len(b)})")
    d = b - a
    idx = np.random.default_rng(seed).integers(0, len(d), size=(resamples, len(d)))
    lo, hi = _percentile(d[idx].mean(axis=1))
    return {"value": float(d.mean()), "lo": lo, "hi": hi, "n": int(len(d))}


def cohens_d(x: Sequence[float], y: Sequence[float]) -> float:
    """(mean(x) − mean(y)) / s_pooled with s_pooled² = ((n_x−1)s_x² + (n_y−1)s_y²) / (n_x+n_y−2)
    (sample variances, ddof=1). Needs two observations in one group at least."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(a) == 0 or len(b) == 0 or len(a) + len(b) < 3:
        raise ValueError(f"Cohen's d needs both groups non-empty and 3 observations in all (got {len(a)} and {len(b)})")
    ss = (a.var(ddof=1) * (len(a) - 1) if len(a) > 1 else 0.0) + (b.var(ddof=1) * (len(b) - 1) if len(b) > 1 else 0.0)
    sd = math.sqrt(ss / (len(a) + len(b) - 2))
    if sd == 0:
        return math.inf if a.mean() != b.mean() else 0.0
    return float((a.mean() - b.mean()) / sd)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' κ of an ``[items, categories]`` matrix of rating counts (every item rated by the
    same number n ≥ 2 of raters): κ = (P̄ − P̄ₑ) / (1 − P̄ₑ) with P̄ the mean per-item agreement
    Σⱼ nᵢⱼ(nᵢⱼ−1) / (n(n−1)) and P̄ₑ = Σⱼ pⱼ² from the category shares. All raters choosing one
    category everywhere (P̄ₑ = 1) gives κ = 1."""
    m = np.asarray(counts, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError("fleiss_kappa needs an [items, categories] matrix with at least one item")
    n = m.sum(axis=1)
    if not np.all(n == n[0]) or n[0] < 2:
        bad = int(np.argmax(n != n[0])) if not np.all(n == n[0]) else 0
        raise ValueError(f"fleiss_kappa: every item needs the same number (>= 2) of ratings; item {bad} has {n[bad]:g}, item 0 has {n[0]:g}")
    r = n[0]
    p_items = ((m * (m - 1)).sum(axis=1) / (r * (r - 1))).mean()
    p_cat = m.sum(axis=0) / m.sum()
    p_e = float((p_cat**2).sum())
    return 1.0 if p_e == 1.0 else float((p_items - p_e) / (1 - p_e))


def drift_ratio(virtual: float, base: float) -> float | None:
    """How many times more the virtual-token rows moved than the base-vocabulary rows (relative
    drifts); None when the base rows did not move (frozen base vocabulary: no ratio)."""
    return None if base == 0 else virtual / base
