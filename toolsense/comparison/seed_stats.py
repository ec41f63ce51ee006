"""Seed-aware statistics: a configuration is a population of training runs (seeds) evaluated on a
sample of items, so an interval over a configuration — or a difference between two — resamples
*both*: seeds within a configuration and items within seeds, the item ids drawn once for every seed
since the same items recur in every run (stats.py's item-only functions are what an arm of one seed
gets, and its results say so: ``one_seed``).

- :func:`seed_item_interval` — the core: any Σ coefficient × ratio-of-sums statistic over labelled
  runs, value ± t_ν · se with the two-level variance (:func:`_variance_parts`), never narrower than the
  items-only interval of the same runs (:func:`_items_only_variance`).
- :func:`seed_mean` — one configuration's pooled mean (or ratio of pooled sums, IS) over its seeds.
- :func:`seed_paired_diff` / :func:`seed_contrast` — B − A paired by item, and by seed where both
  arms hold the same seeds (else each arm's seeds drawn on their own); a difference of two such.
- :func:`seed_normalized_gain_contrast` — the normalized Stage-2 gain of one side minus another's.

Why not the percentiles of a plain two-level bootstrap: with 3 seeds its seed level has the plug-in
variance (S − 1)/S · s² / S and normal quantiles where 2 degrees of freedom need t; and re-drawing
each run's Bernoulli noise at both levels counts it about twice. In a simulation (logit recall,
150 items, 300 data sets; the model of tests/comparison/test_seed_stats.py) the percentile interval
of that bootstrap covered 99% with no between-seed variance and 87% with a large one (logit SD 0.5)
at 3 seeds; this module's interval covers 96% and 95% at 4 seeds (the test's numbers; 92% and 94% before its
items-only floor; 93% with the large one at 3 seeds), the item-only one 92% and 57%. Where seeds disagree item by
item (tests/comparison/test_seed_coverage.py: 2 seeds × 58 queries at a 3% hit rate) it covers 97%, 76% before
the floor, whose zero-width intervals (the seeds' means tied) were a quarter of the data sets.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

INTERVAL_METHOD = ("a closed-form crossed-design t-interval: value ± t_ν · se, the standard error from the two-level "
                   "variance (seeds within a configuration; items crossed with seeds, the same item ids in every run), "
                   "ν from the seeds (comparison/seed_stats.py: seed_item_interval), no resampling, and never narrower than "
                   "the items-only t-interval of the pooled runs (N − 1 df), which replaces it where wider (seeds that disagree "
                   "item by item); where every arm has one seed, a cluster bootstrap over items (marked †)")
"""How every seed-aware interval of a verdict is computed, named as implemented (a study report states it beside the
interval its plan registered)."""

Unit = tuple[str, str]
"""(group, seed) of one training run in a two-level design: ``group`` a population of seeds (a
configuration, one arm of a comparison), ``seed`` the run. Observations of one label in several
terms are one run: its seed is one draw for all of them (a Stage-1 and a Stage-2 evaluation of
one run; two arms paired by seed)."""

Term = tuple[float, Sequence[tuple[Unit, Mapping[str, float], Optional[Mapping[str, float]]]]]
"""``(coefficient, [(unit, item id -> numerator, item id -> denominator or None for 1 per item)])``:
one ratio of sums over its units' items (a pooled mean, a pooled IS, a normalized gain) and its
weight in the statistic Σ coefficient × ratio."""


def _design(terms: Sequence[Term]) -> tuple[list[Unit], np.ndarray, np.ndarray, np.ndarray]:
    """Unit labels and ``[term, unit, item]`` numerators / denominators (0 where a unit lacks an item);
    a run with no items in a term is no observation of it (and no seed of its group)."""
    units: dict[Unit, int] = {}
    items: dict[str, int] = {}
    for _, obs in terms:
        for unit, num, _ in obs:
            if not num:
                continue
            units.setdefault((str(unit[0]), str(unit[1])), len(units))
            for i in num:
                items.setdefault(str(i), len(items))
    num = np.zeros((len(terms), len(units), len(items)))
    den = np.zeros_like(num)
    for j, (_, obs) in enumerate(terms):
        for unit, n, d in obs:
            if not n:
                continue
            u = units[(str(unit[0]), str(unit[1]))]
            for i, v in n.items():
                if d is not None and i not in d:
                    raise ValueError(f"seed_item_interval: item {i!r} of unit {unit} has a numerator and no denominator")
                num[j, u, items[str(i)]] += float(v)
                den[j, u, items[str(i)]] += 1.0 if d is None else float(d[i])
    return list(units), num, den, np.array([float(c) for c, _ in terms])


def _items_only_variance(z: np.ndarray) -> float:
    """The variance of Σ z with the runs held fixed and only the items drawn: N/(N − 1) · Σ_i (w_i − w̄)², w_i = Σ_u z_ui
    (each item's contributions pooled over every run), df N − 1 — what an arm of one seed gets, and for several seeds the
    items-only interval of the per-item means pooled over them (stats.cluster_bootstrap's target)."""
    n = z.shape[1]
    w = z.sum(0)
    return float(np.sum((w - w.mean()) ** 2) * n / (n - 1)) if n > 1 else 0.0


def _variance_parts(z: np.ndarray, labels: Sequence[Unit]) -> tuple[list[tuple[float, float]], dict[str, int]]:
    """The two-level variance of Σ z (``z``: [unit, item] linearized contributions) as ``(variance,
    degrees of freedom)`` parts: per group of two or more seeds, its between-seed part S·s²(Z_u)
    (df S − 1; the seed bootstrap's (S − 1)/S · s² rescaled to the unbiased s²); then the item part
    shared by the runs, N/(N − 1) · Σ over pairs of distinct units of their item cross-products plus,
    per unit, its mean cross-product with the other seeds of its group (its own item variance where
    it is alone: the item-only variance), df N − 1. A run's own item noise is in its between-seed
    part already and is not counted twice."""
    groups: dict[str, list[int]] = {}
    for u, (g, _) in enumerate(labels):
        groups.setdefault(g, []).append(u)
    zu, n = z.sum(1), z.shape[1]
    parts = [(float(len(us) * np.var(zu[us], ddof=1)), len(us) - 1.0) for us in groups.values() if len(us) > 1]
    zc = z - zu[:, None] / n
    cross = zc @ zc.T
    shared = float(cross.sum() - np.trace(cross))
    for us in groups.values():
        for u in us:
            shared += float(np.mean([cross[u, w] for w in us if w != u])) if len(us) > 1 else float(cross[u, u])
    parts.append((max(shared * n / (n - 1), 0.0) if n > 1 else 0.0, n - 1.0))
    return parts, {g: len(us) for g, us in groups.items()}


Transform = Callable[[np.ndarray, np.ndarray], float]
"""A smooth statistic of the terms' ratios (``[term]``) given their denominators' totals (``[term]``),
e.g. a log-odds difference; the terms' coefficients are then not used."""


def _gradient(transform: Transform, ratio: np.ndarray, tot: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """∂ transform / ∂ ratio_j by central differences (the delta method's linearization)."""
    grad = np.zeros_like(ratio)
    for j in range(len(ratio)):
        e = np.zeros_like(ratio)
        e[j] = step
        grad[j] = (transform(ratio + e, tot) - transform(ratio - e, tot)) / (2 * step)
    return grad


def _interval(value: float, z: np.ndarray, parts: list[tuple[float, float]], bounds: tuple[float, float] | None) -> dict[str, Any]:
    """value ± t_ν · se with the two-level variance ``parts`` (ν by Welch–Satterthwaite), never narrower than the
    items-only interval of the same runs (value ± t_{N−1} · its se, :func:`_items_only_variance`: the runs held fixed,
    the items drawn), which replaces it where wider. Drawing the seeds can only add variance to what drawing the items
    gives (total variance: E[Var | seeds] + Var[E | seeds]), so the items-only variance estimates a lower bound of the
    truth, on N − 1 degrees of freedom; the two-level estimate is unbiased but rests on S − 1 between seeds and on a
    shared item part that falls below 0 (clipped) where seeds disagree item by item: two seeds that each hit 1 of 58
    queries, different ones, read a variance of 0 — less agreement, a narrower interval — and with the floor the
    items-only interval, 1.7 pp [0, 4.1]. The wider of the two is taken at each level (a Welch ν above N − 1 could
    leave t_ν · se just short of the floor). Clipped to ``bounds``. Returns lo, hi, lo90, hi90, se and df of the
    interval given (df None where infinite: the normal), items_floor (the items-only one was the wider at 95%; then
    two_level_se and two_level_df too) and ``floor_method`` (its text, or None)."""
    from scipy.stats import t

    var = sum(v for v, _ in parts)
    spread = sum(v * v / df for v, df in parts if df > 0)
    df = var * var / spread if spread > 0 else math.inf
    n = z.shape[1]
    floor_var, floor_df = _items_only_variance(z), n - 1.0
    halves = {key: (float(t.ppf(1 - alpha / 2, df)) * math.sqrt(var),
                    float(t.ppf(1 - alpha / 2, floor_df)) * math.sqrt(floor_var) if n > 1 else 0.0)
              for key, alpha in (("", 0.05), ("90", 0.10))}
    floored = halves[""][1] > halves[""][0] * (1 + 1e-9) + 1e-15  # not where they agree (one seed per group: the same)
    out: dict[str, Any] = {"se": math.sqrt(var), "df": df if math.isfinite(df) else None, "items_floor": floored,
                           "floor_method": None}
    if floored:  # the interval given is the items-only one; the two-level estimate stays on record
        out.update(two_level_se=out["se"], two_level_df=out["df"], se=math.sqrt(floor_var), df=floor_df,
                   floor_method=(f"items only over the pooled runs (t with {floor_df:.0f} df), the floor: the two-level "
                                 f"interval ({f't with {df:.1f} df' if math.isfinite(df) else 'se 0'}) was narrower"))
    for key, (two_level, items_only) in halves.items():
        lo, hi = value - max(two_level, items_only), value + max(two_level, items_only)
        out[f"lo{key}"], out[f"hi{key}"] = (max(lo, bounds[0]), min(hi, bounds[1])) if bounds is not None else (lo, hi)
    return out


def seed_item_interval(terms: Sequence[Term], bounds: tuple[float, float] | None = None,
                       transform: Transform | None = None) -> dict[str, Any]:
    """Σ coefficient × (Σ numerators / Σ denominators) over ``terms`` (or ``transform`` of those
    ratios, linearized by the delta method), with a 95% (and 90%) interval
    that treats *seeds* and *items* as the two sampled levels (configurations' runs, the benchmark's
    items): the variance a two-level bootstrap targets — seeds drawn with replacement within each
    group, item ids drawn once per replicate and used for every drawn seed (items recur across seeds:
    the design is crossed, so items are one cluster; Owen 2007's pigeonhole bootstrap) — computed in
    closed form on the statistic's linearization (Woodruff's, for ratios) with the seed level's plug-in
    shrinkage (S − 1)/S undone and no item noise counted twice (:func:`_variance_parts`). The interval is
    value ± t_ν · se, ν by Welch–Satterthwaite over the parts: with 3 seeds the between-seed part has 2
    degrees of freedom, and the percentile interval of a plain two-level bootstrap (normal quantiles,
    shrunk seed variance) undercovers badly there. Never narrower than the items-only interval of the same
    runs (:func:`_interval`). Clipped to ``bounds`` (the values' range, for a mean).
    Returns value, lo, hi, lo90, hi90, se and df of the interval given (df None where it is infinite: the normal),
    items_floor (then two_level_se, two_level_df), n_items, n_seeds (the smallest group), seeds (per group), sd
    (between-seed SD of the per-seed statistic when there is one group, else None), one_seed (some group has one
    seed: its runs' item variance alone stands for it), method."""
    labels, num, den, coef = _design(terms)
    if not labels or num.shape[2] == 0:
        raise ValueError("seed_item_interval of no observations")
    tot = den.sum((1, 2))
    if np.any(tot <= 0):
        raise ValueError("seed_item_interval: a term's denominators sum to 0 (no ratio to estimate)")
    ratio = num.sum((1, 2)) / tot
    grad = coef if transform is None else _gradient(transform, ratio, tot)
    value = float(coef @ ratio) if transform is None else float(transform(ratio, tot))
    if not (math.isfinite(value) and np.all(np.isfinite(grad))):
        raise ValueError("seed_item_interval: the statistic is undefined at these data (a ratio at a pole)")
    z = np.einsum("j,jui->ui", grad / tot, num - ratio[:, None, None] * den)
    parts, seeds = _variance_parts(z, labels)
    ci = _interval(value, z, parts, bounds)
    floor_method, df = ci.pop("floor_method"), ci["df"] if ci["df"] is not None else math.inf
    out: dict[str, Any] = {"value": value, **ci, "n_items": int(num.shape[2]), "n_seeds": min(seeds.values()),
                           "seeds": seeds, "one_seed": min(seeds.values()) < 2, "sd": None}
    if len(seeds) == 1 and len(labels) > 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            unit_ratio, unit_tot = num.sum(2) / den.sum(2), den.sum(2)  # [term, unit]
            per_seed = (coef @ unit_ratio if transform is None else
                        np.array([transform(unit_ratio[:, u], unit_tot[:, u]) for u in range(len(labels))]))
        if np.all(np.isfinite(per_seed)):
            out["sd"] = float(np.std(per_seed, ddof=1))
    out["method"] = floor_method or (
        f"two-level: seeds and items (se over both, t with {df:.1f} df)" if not out["one_seed"]
        else "items only (one seed: the between-seed variance is unknown)" if len(labels) == len(seeds)
        else f"two-level, a group with one seed counted by its items alone (t with {df:.1f} df)")
    return out


Seeds = Mapping[Any, Mapping[str, float]]
"""seed -> item id -> value: one configuration's (arm's) runs."""


def seed_mean(per_seed: Seeds, denominators: Seeds | None = None, group: str = "configuration",
              bounds: tuple[float, float] | None = None) -> dict[str, Any]:
    """One configuration's pooled mean over its seeds' items (every observation weighted alike), or
    with ``denominators`` the ratio of pooled sums (IS = ΣRf / ΣRc), with the two-level interval of
    :func:`seed_item_interval`; ``bounds`` default to the values' range for a mean."""
    if denominators is not None and set(denominators) != set(per_seed):
        raise ValueError(f"seed_mean: numerators have seeds {sorted(per_seed)}, denominators {sorted(denominators)}")
    obs = [((group, str(s)), v, None if denominators is None else denominators[s]) for s, v in per_seed.items()]
    if bounds is None and denominators is None:
        vals = [float(x) for v in per_seed.values() for x in v.values()]
        bounds = (min(vals), max(vals)) if vals else None
    return seed_item_interval([(1.0, obs)], bounds)


def _paired_terms(groups: Mapping[str, tuple[Seeds, Seeds]], sign: float) -> list[Term]:
    """Terms of the mean over ``groups`` of each group's B − A (group: (A's runs, B's runs) by seed).
    Arms holding the same seeds are paired by seed: one term over per-seed differences on the items
    both runs answered, units (group, seed). Otherwise each arm's seeds are its own population (units
    (group:A, seed) and (group:B, seed)): B's pooled mean minus A's, over the items both arms answered."""
    terms: list[Term] = []
    w = sign / max(len(groups), 1)
    for g, (a, b) in groups.items():
        if set(a) == set(b):
            terms.append((w, [((g, str(s)), {i: float(b[s][i]) - float(v) for i, v in a[s].items() if i in b[s]}, None)
                              for s in a]))
            continue
        common = set().union(*map(set, a.values())) & set().union(*map(set, b.values()))
        for arm, runs, c in (("A", a, -w), ("B", b, w)):
            terms.append((c, [((f"{g}:{arm}", str(s)), {i: float(x) for i, x in v.items() if i in common}, None) for s, v in runs.items()]))
    return [t for t in terms if any(n for _, n, _ in t[1])]


def _range(groups: Sequence[Mapping[str, tuple[Seeds, Seeds]]]) -> tuple[float, float]:
    """Bounds of a difference of means of values in [lo, hi]: [lo − hi, hi − lo] over every value."""
    vals = [float(x) for gs in groups for a, b in gs.values() for runs in (a, b) for v in runs.values() for x in v.values()]
    return (min(vals) - max(vals), max(vals) - min(vals)) if vals else (-math.inf, math.inf)


def seed_paired_diff(groups: Mapping[str, tuple[Seeds, Seeds]]) -> dict[str, Any] | None:
    """The mean over ``groups`` (e.g. row pairs: configuration A against B) of B − A, paired by item
    and by seed where both arms hold the same seeds (:func:`_paired_terms`), with the two-level
    interval; ``n_pairs`` groups. None when nothing pairs."""
    terms = _paired_terms(groups, 1.0)
    if not terms:
        return None
    return {**seed_item_interval(terms, _range([groups])), "n_pairs": len(groups)}


def seed_contrast(first: Mapping[str, tuple[Seeds, Seeds]], second: Mapping[str, tuple[Seeds, Seeds]]) -> dict[str, Any] | None:
    """(paired difference of ``first``) − (that of ``second``), e.g. the standard Stage-2 lift minus the
    realistic one: one statistic, so a run (group, seed) in both moves both sides at once, and items
    of both are drawn together."""
    a, b = _paired_terms(first, 1.0), _paired_terms(second, -1.0)
    if not a or not b:
        return None
    lo, hi = _range([first, second])
    return seed_item_interval(a + b, (lo - hi, hi - lo))


Gains = Mapping[str, Mapping[Any, tuple[Mapping[str, float], Mapping[str, float]]]]
"""group -> seed -> (before, after): item id -> value in [0, 1], the same run's two evaluations."""


def _gain_terms(side: Gains, groups: Sequence[str], sign: float) -> list[Term]:
    out = []
    for g in groups:
        obs = []
        for s, (a, b) in side[g].items():
            keep = [i for i in a if i in b]
            obs.append(((g, str(s)), {i: float(b[i]) - float(a[i]) for i in keep}, {i: 1.0 - float(a[i]) for i in keep}))
        out.append((sign / len(groups), obs))
    return out


def seed_normalized_gain_contrast(first: Gains, second: Gains) -> dict[str, Any] | None:
    """stats.normalized_gain_contrast with seeds as a level: each group's (configuration's) gain
    Σ(after − before) / Σ(1 − before) over its runs and items, averaged over the groups both sides
    hold; ``first`` minus ``second`` with the two-level interval, a run in both sides one unit. Adds
    ``first`` / ``second`` (each side's mean gain, its interval), ``per_group``, ``n_groups``."""
    groups = [g for g in first if g in second and first[g] and second[g]]
    if not groups:
        return None
    one, two = _gain_terms(first, groups, 1.0), _gain_terms(second, groups, -1.0)
    try:
        diff = seed_item_interval(one + two)
        sides = [seed_item_interval(one), seed_item_interval([(-c, o) for c, o in two])]
    except ValueError:  # a group with no headroom on a side: no gain to estimate
        return None
    point = {g: (float(len(groups) * seed_item_interval([one[k]])["value"]), float(-len(groups) * seed_item_interval([two[k]])["value"]))
             for k, g in enumerate(groups)}
    return {**diff, "first": sides[0], "second": sides[1], "n_groups": len(groups), "per_group": point}
