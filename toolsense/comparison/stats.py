"""The paper's statistics over finished evaluations, as pure functions on plain numbers (compare.py
and annotate.py feed them from results.json / samples.jsonl / filled rating sheets).

Resample the unit that was sampled: the same items (queries, probe items) recur in every seed,
run and configuration, so every interval over pooled values draws *items*, each carrying all its
seeds and runs (a cluster bootstrap), never (seed, item) rows as if they were independent.

- :func:`mean_sd` — a configuration's mean and sample standard deviation over seeds.
- :func:`cluster_bootstrap` — the pooled mean of per-item values of several seeds / runs, with a
  95% (and the 90% that an equivalence test reads) interval over resampled items; with
  denominators, the ratio of pooled sums (seed-averaged IS = ΣRf / ΣRc), draws whose denominator
  is 0 counted and left out rather than read as 0.
- :func:`paired_diff` — mean(B − A) over the items both answered, pooled over several (A, B) run
  pairs, clustered by item; :func:`contrast` — the difference of two such paired differences
  (e.g. of two lifts), items of both resampled in one draw.
- :func:`cohens_d` / :func:`cohens_d_ci` — standardised difference of two groups with the pooled
  standard deviation, and its bootstrap interval over the units of each group.
- :func:`fleiss_kappa` — agreement of a fixed number of raters per item over categories.
- :func:`drift_ratio` — relative drift of the virtual rows over that of the base-vocabulary rows.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

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


def _items(groups: Sequence[Mapping[str, float]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Item ids (first appearance order) and, per item, the sum and count of its values over
    ``groups`` (one mapping item id -> value per seed / run)."""
    order: dict[str, int] = {}
    for g in groups:
        for i in g:
            order.setdefault(str(i), len(order))
    sums, counts = np.zeros(len(order)), np.zeros(len(order))
    for g in groups:
        for i, v in g.items():
            sums[order[str(i)]] += float(v)
            counts[order[str(i)]] += 1
    return list(order), sums, counts


def _interval(value: float, draws: np.ndarray, n_items: int, extra: dict | None = None) -> dict[str, Any]:
    """``{value, lo, hi, lo90, hi90, n_items, undefined}`` from bootstrap draws (NaN = an undefined
    draw, e.g. a ratio with denominator 0: counted, left out of the percentiles)."""
    ok = draws[np.isfinite(draws)]
    out: dict[str, Any] = {"value": value, "lo": None, "hi": None, "lo90": None, "hi90": None, "n_items": n_items,
                           "undefined": int(len(draws) - len(ok)), **(extra or {})}
    if len(ok) and len(ok) >= 0.5 * len(draws):  # most draws defined: an interval means something
        out["lo"], out["hi"] = _percentile(ok, 0.05)
        out["lo90"], out["hi90"] = _percentile(ok, 0.10)
    return out


def cluster_draws(n_items: int, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """``[resamples, n_items]`` item indices drawn with replacement (one draw of *items*)."""
    return np.random.default_rng(seed).integers(0, n_items, size=(resamples, n_items))


def cluster_bootstrap(groups: Sequence[Mapping[str, float]], resamples: int = 1000, seed: int = 0,
                      denominators: Sequence[Mapping[str, float]] | None = None, min_hits: int = 10) -> dict[str, Any]:
    """Pooled mean of ``groups`` (per seed / run: item id -> value) — every observation weighted
    alike — with percentile intervals over ``resamples`` draws of *items*, each item carrying
    all its observations. With ``denominators`` (the same items: constrained hits beside
    free-form hits) the statistic is the ratio of pooled sums (IS = ΣRf / ΣRc, 0 when ΣRc = 0);
    a draw whose denominator sums to 0 is undefined, counted in ``undefined`` and left out
    (no interval when most are), and ``hits`` / ``few_hits`` say whether the ratio rests on
    ``min_hits`` constrained hits. Returns value, lo, hi (95%), lo90, hi90, n_items, undefined."""
    ids, num, cnt = _items(groups)
    if not ids:
        raise ValueError("cluster_bootstrap of no observations")
    idx = cluster_draws(len(ids), resamples, seed)
    if denominators is None:
        return _interval(float(num.sum() / cnt.sum()), num[idx].sum(1) / cnt[idx].sum(1), len(ids))
    den_ids, den, _ = _items(denominators)
    if set(den_ids) != set(ids) or len(den_ids) != len(ids):
        raise ValueError(f"cluster_bootstrap: numerators cover {len(ids)} items, denominators {len(den_ids)}; they must be the same items")
    den = den[[den_ids.index(i) for i in ids]] if den_ids != ids else den
    ds = den[idx].sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = np.where(ds > 0, num[idx].sum(1) / np.where(ds > 0, ds, 1), np.nan)
    hits = float(den.sum())
    return _interval(float(num.sum() / hits) if hits > 0 else 0.0, draws, len(ids),
                     {"hits": int(round(hits)), "few_hits": hits < min_hits})


def _pair_diffs(pairs: Sequence[tuple[Mapping[str, float], Mapping[str, float]]]) -> list[dict[str, float]]:
    """Per pair of runs, item id -> value under B minus under A, over the items both answered."""
    return [{i: float(b[i]) - float(a[i]) for i in a if i in b} for a, b in pairs]


def paired_diff(pairs: Sequence[tuple[Mapping[str, float], Mapping[str, float]]], resamples: int = 1000,
                seed: int = 0) -> dict[str, Any] | None:
    """mean(B − A) over the items both runs of a pair answered, pooled over ``pairs`` (each: A's
    and B's item id -> value; e.g. one per seed, or one per configuration), with the interval of
    :func:`cluster_bootstrap` over items — an item's differences in every pair move together, and
    the item-to-item variation both runs share cancels. ``n_pairs`` pairs; None when none pairs."""
    diffs = [d for d in _pair_diffs(pairs) if d]
    if not diffs:
        return None
    return {**cluster_bootstrap(diffs, resamples, seed), "n_pairs": len(diffs)}


def contrast(first: Sequence[tuple[Mapping[str, float], Mapping[str, float]]],
             second: Sequence[tuple[Mapping[str, float], Mapping[str, float]]], resamples: int = 1000,
             seed: int = 0) -> dict[str, Any] | None:
    """(paired difference of ``first``) − (paired difference of ``second``), e.g. the verbose lift
    minus the realistic lift: the items of both (the union; one item set or two) are resampled in
    one draw, each carrying all its pairs, so an item shared by both sides moves both at once."""
    a, b = [d for d in _pair_diffs(first) if d], [d for d in _pair_diffs(second) if d]
    if not a or not b:
        return None
    ids = list(dict.fromkeys([i for d in a + b for i in d]))
    pos = {i: k for k, i in enumerate(ids)}
    sums = np.zeros((2, len(ids)))
    cnts = np.zeros((2, len(ids)))
    for side, ds in enumerate((a, b)):
        for d in ds:
            for i, v in d.items():
                sums[side, pos[i]] += v
                cnts[side, pos[i]] += 1
    idx = cluster_draws(len(ids), resamples, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = sums[0][idx].sum(1) / cnts[0][idx].sum(1) - sums[1][idx].sum(1) / cnts[1][idx].sum(1)
    value = float(sums[0].sum() / cnts[0].sum() - sums[1].sum() / cnts[1].sum())
    return _interval(value, draws, len(ids))


Pairs = Sequence[tuple[Mapping[str, float], Mapping[str, float]]]


def normalized_gain_contrast(first: Mapping[str, Pairs], second: Mapping[str, Pairs], resamples: int = 1000,
                             seed: int = 0) -> dict[str, Any] | None:
    """The normalized gain of ``first`` minus that of ``second``, each averaged over the groups
    both hold (e.g. configurations; each group's pairs: its seeds' (before, after) item id -> value
    in [0, 1]). A group's normalized gain is Σ(after − before) / Σ(1 − before) over its items and
    pairs: the share of the headroom left before that was gained, net of what was lost (Hake's
    gain), so a side that starts near 1 is not capped at its small headroom. The items of both
    sides are resampled in one draw (as :func:`contrast`), each with all its pairs in every group.
    Returns the difference's interval with ``first`` / ``second`` (each side's mean gain, its
    interval) and ``per_group`` (each group's two gains); None when no group has both sides."""
    groups = [g for g in first if g in second and first[g] and second[g]]
    if not groups:
        return None
    ids = list(dict.fromkeys(str(i) for side in (first, second) for g in groups for a, b in side[g] for i in a if i in b))
    pos = {i: k for k, i in enumerate(ids)}
    net = np.zeros((2, len(groups), len(ids)))
    head = np.zeros((2, len(groups), len(ids)))
    for s, side in enumerate((first, second)):
        for gi, g in enumerate(groups):
            for a, b in side[g]:
                for i in a:
                    if i in b:
                        net[s, gi, pos[str(i)]] += float(b[i]) - float(a[i])
                        head[s, gi, pos[str(i)]] += 1.0 - float(a[i])
    idx = cluster_draws(len(ids), resamples, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        gains = net[:, :, idx].sum(-1) / head[:, :, idx].sum(-1)  # [side, group, resample]
        point = net.sum(-1) / head.sum(-1)  # [side, group]
    sides = [_interval(float(point[s].mean()), gains[s].mean(0), len(ids)) for s in (0, 1)]
    diff = _interval(float(point[0].mean() - point[1].mean()), gains[0].mean(0) - gains[1].mean(0), len(ids))
    return {**diff, "first": sides[0], "second": sides[1], "n_groups": len(groups),
            "per_group": {g: (float(point[0, gi]), float(point[1, gi])) for gi, g in enumerate(groups)}}


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


def cohens_d_ci(x: Sequence[float], y: Sequence[float], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """:func:`cohens_d` with a 95% percentile interval from resampling the units of each group
    with replacement, each group on its own (a draw of a few units can repeat one value: sd 0,
    d infinite; such draws are counted in ``undefined`` and left out). With few units per group
    the interval is wide, as it should be."""
    d = cohens_d(x, y)
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rng = np.random.default_rng(seed)
    ia, ib = rng.integers(0, len(a), (resamples, len(a))), rng.integers(0, len(b), (resamples, len(b)))
    xa, xb = a[ia], b[ib]
    ss = (xa.var(axis=1, ddof=1) * (len(a) - 1) if len(a) > 1 else 0.0) + (xb.var(axis=1, ddof=1) * (len(b) - 1) if len(b) > 1 else 0.0)
    sd = np.sqrt(ss / (len(a) + len(b) - 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = np.where(sd > 1e-12, (xa.mean(1) - xb.mean(1)) / np.where(sd > 1e-12, sd, 1), np.nan)
    return {**_interval(d, draws, len(a) + len(b)), "d": d, "n": [len(a), len(b)]}


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
        raise ValueError(f"fleiss_kappa: every item needs the same number (>= 2) of ratings; "
                         f"item {bad} has {n[bad]:g}, item 0 has {n[0]:g}")
    r = n[0]
    p_items = ((m * (m - 1)).sum(axis=1) / (r * (r - 1))).mean()
    p_cat = m.sum(axis=0) / m.sum()
    p_e = float((p_cat**2).sum())
    return 1.0 if p_e == 1.0 else float((p_items - p_e) / (1 - p_e))


def drift_ratio(virtual: float, base: float) -> float | None:
    """How many times more the virtual-token rows moved than the base-vocabulary rows (relative
    drifts); None when the base rows did not move (frozen base vocabulary: no ratio)."""
    return None if base == 0 else virtual / base
