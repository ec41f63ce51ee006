"""The statistics of an ablation table's cells (compare.py): a configuration's cell pooled over
its seeds with an interval over seeds and items (seed_stats.py; over items alone for one seed, and
marked), the IS of pooled seeds, knowledge retention paired per item (and per run), and Cohen's d
between flat and hierarchical configurations with its one stated unit of observation (read
identically by ``compare.py`` and by the report's finding 3)."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from toolsense.comparison.runs import item_values, run_dir_of
from toolsense.comparison.seed_stats import seed_mean, seed_paired_diff
from toolsense.comparison.stats import cluster_bootstrap, cohens_d_ci, mean_sd, paired_diff
from toolsense.metrics.intervals import bootstrap_indices, is_ci, wilson_ci
from toolsense.metrics.registry import METRICS


def combine_seeds(metric: str | None, entries: Sequence[tuple[dict | None, dict]], resamples: int, seed: int,
                  min_hits: int = 10, tier: str | None = None) -> dict | None:
    """One cell from the runs (seeds) of one configuration. Always: ``value``, ``lo``, ``hi``,
    ``n_seeds`` (1 for one run), ``sd`` (between-seed SD of the runs' own estimates; None for one),
    ``method`` (the interval's name) and ``one_seed``. Several runs with per-item samples: the pooled
    estimate (IS@k the ratio of pooled free-form to constrained hits, ``few_hits`` under ``min_hits``)
    with the two-level interval over seeds and items (seed_stats.seed_mean; a flat index's IS widened
    to hold the Wilson interval over items). One run: the item-only interval (stats.cluster_bootstrap;
    IS by metrics.is_ci), marked ``one_seed``: one run is not a configuration. Without samples: one
    run's estimate as written, several runs' mean ± sd with no interval. A system with no training
    run (a baseline, an untrained model) is deterministic: its estimate as written, ``deterministic``,
    never ``one_seed``. With ``tier`` (a tier column's cell: ``entries`` hold the tier's estimates), several
    runs are pooled over the items of that tier alike; one run keeps the tier's estimate as written (its
    interval already over those items alone)."""
    present = [(est, res) for est, res in entries if est and est.get("value") is not None]
    if not present:
        return None
    cell = dict(present[0][0])
    mean, sd = mean_sd([est["value"] for est, _ in present])
    n = len(present)
    if not any(run_dir_of(res) for _, res in present):  # a baseline, an untrained model: no training seed to draw
        return {**cell, "n_seeds": 1, "sd": None, "one_seed": False, "deterministic": True,
                "method": "deterministic system (no training seed): items only, as results.json wrote it"}
    cell.update(n_seeds=n, sd=sd, one_seed=n == 1, method="one run (one seed), as results.json wrote it")
    if n > 1:
        cell.update(value=mean, lo=None, hi=None, method="mean ± sd over seeds (no per-item samples: no interval)")
    if tier is not None and n == 1:
        return cell
    per = [item_values(res["_path"], metric, tier) for _, res in present] if metric else [None]
    if any(p is None or not p for p in per):
        return cell
    if METRICS.is_ratio(metric):
        if n == 1:
            f, c = zip(*per[0].values())
            ci = {**is_ci(f, c, bootstrap_indices(len(f), resamples, seed), min_hits=min_hits), "method": "items only (one seed)"}
        else:
            ci = pooled_is(per, resamples, seed, min_hits)
    elif n == 1:
        ci = {**cluster_bootstrap(per, resamples, seed), "method": "items only: cluster bootstrap (one seed)"}
    else:
        ci = seed_mean(dict(enumerate(per)))
    cell.update({k: v for k, v in ci.items() if (k != "undefined" or v) and k not in ("sd", "n_seeds", "one_seed", "seeds")})
    return cell


def pooled_is(per: Sequence[dict[str, tuple[float, float]]], resamples: int, seed: int, min_hits: int) -> dict[str, Any]:
    """IS of several seeds (``per``: item -> (free hit, constrained hit) per seed): the ratio of
    pooled sums with the two-level interval (seed_stats.seed_mean; without a constrained hit, no
    ratio: stats.cluster_bootstrap's answer). Where every free hit is a constrained hit (a flat index)
    IS is a proportion, and the interval is widened to hold the Wilson interval of that proportion
    over the items with a constrained hit, so that a few items whose every seed hits (or misses) give
    no zero-width interval."""
    num = {k: {i: fc[0] for i, fc in p.items()} for k, p in enumerate(per)}
    den = {k: {i: fc[1] for i, fc in p.items()} for k, p in enumerate(per)}
    hits = sum(c for p in per for _, c in p.values())
    if hits <= 0:
        return {**cluster_bootstrap(list(num.values()), resamples, seed, denominators=list(den.values()), min_hits=min_hits),
                "method": "no constrained hit: no ratio"}
    ci = {**seed_mean(num, den, bounds=(0.0, math.inf)), "hits": int(round(hits)), "few_hits": hits < min_hits}
    if all(f <= c for p in per for f, c in p.values()):
        n_items = len({i for p in per for i, (_, c) in p.items() if c})
        lo, hi = wilson_ci(ci["value"] * n_items, n_items)
        ci.update(lo=min(lo, ci["lo"]), hi=min(max(hi, ci["hi"]), 1.0), method=ci["method"] + "; Wilson over items where wider")
    return ci


def retention(entries: dict[tuple[str, str], list], rows_meta: dict[str, dict], probe_cols: Sequence[str],
              cells: dict[str, dict], resamples: int, seed: int) -> list[str]:
    """Knowledge retention: for every configuration evaluated on a probe after Stage 1 and after
    Stage 2, the column ``retention <probe> Δacc`` on its Stage-2 row = accuracy after Stage 2
    minus after Stage 1 over the probe items answered under both (each run's items paired by
    item id), seeds pooled and clustered by item (stats.paired_diff). Adds the cells; returns the columns."""
    cols = []
    for label, m in rows_meta.items():
        if m["stage"] != "stage1":
            continue
        for col in probe_cols:
            before, after = entries.get((label, col)), entries.get((m["base"], col))
            if not before or not after or not col.endswith(" acc"):
                continue
            by_run = {run_dir_of(r): r for _, r in before}
            pairs = []
            for _, r2 in after:
                r1 = by_run.get(run_dir_of(r2))
                a, b = (item_values(r1["_path"], "accuracy") if r1 else None), item_values(r2["_path"], "accuracy")
                if a is not None and b is not None:
                    pairs.append((a, b))
            est = retention_estimate(pairs, label, resamples, seed)
            if est is None:
                continue
            name = f"retention {col[: -len(' acc')]} Δacc"
            if name not in cols:
                cols.append(name)
            cells.setdefault(m["base"], {})[name] = est
    return cols


def retention_estimate(pairs: Sequence[tuple[dict, dict]], label: str, resamples: int, seed: int) -> dict | None:
    """Stage 2 − Stage 1 of one configuration's runs (``pairs``: per run, its two evaluations' item
    values): over runs and items, each run paired with itself (seed_stats.seed_paired_diff) when it
    has several runs, else over items alone (stats.paired_diff), marked ``one_seed``."""
    if len(pairs) > 1:
        return seed_paired_diff({label: (dict(enumerate(a for a, _ in pairs)), dict(enumerate(b for _, b in pairs)))})
    est = paired_diff(pairs, resamples, seed)
    return est and {**est, "n_seeds": 1, "sd": None, "one_seed": True, "method": "items only: cluster bootstrap (one seed)"}


def stage2_schemes(rows_meta: dict[str, dict]) -> dict[str, str]:
    """Row label -> index scheme (flat / hierarchical) of the Stage-2 training rows."""
    return {lb: m["scheme"] for lb, m in rows_meta.items()
            if not m["baseline"] and m["stage"] == "stage2" and m["scheme"] in ("flat", "hierarchical")}


EFFECT_UNIT = "one configuration's seed-pooled value on one retrieval benchmark (Stage-2 rows; few-hit IS left out)"
"""The unit of observation of Cohen's d, the same in compare.py and in finding 3."""


def effect_size(cells: dict[str, dict], schemes: dict[str, str], retrieval_cols: Sequence[str], metric: str,
                resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Cohen's d (pooled sd) of ``metric`` between flat and hierarchical configurations, with a
    95% bootstrap interval over the units of each group (stats.cohens_d_ci); d > 0 when flat
    configurations score higher. The unit (:data:`EFFECT_UNIT`): one cell of a Stage-2 row
    (``schemes``: row -> scheme) in a column of ``retrieval_cols`` ending in `` metric``; a cell
    flagged ``few_hits`` is listed under ``excluded`` and left out."""
    groups: dict[str, list[float]] = {"flat": [], "hierarchical": []}
    units: list[str] = []
    excluded: list[str] = []
    for label, scheme in sorted(schemes.items()):
        for col in retrieval_cols:
            est = cells.get(label, {}).get(col)
            if not col.endswith(f" {metric}") or not est or est.get("value") is None:
                continue
            if est.get("few_hits"):
                excluded.append(f"{label} | {col} ({est.get('hits')} hits)")
                continue
            groups[scheme].append(est["value"])
            units.append(f"{label} | {col}")
    out: dict[str, Any] = {"metric": metric, "unit": EFFECT_UNIT, **groups, "units": units, "excluded": excluded}
    try:
        ci = cohens_d_ci(groups["flat"], groups["hierarchical"], resamples, seed)
        out.update(d=ci["d"], lo=ci["lo"], hi=ci["hi"])
    except ValueError as e:
        out["d"], out["why_none"] = None, str(e)
    return out


Z_975, Z_80 = 1.959964, 0.841621
"""Normal quantiles of a two-sided 5% test and of 80% power: the minimum detectable difference is
(z_.975 + z_.80) standard errors."""


def d_power(n_flat: int, n_hier: int) -> dict:
    """The smallest Cohen's d a two-sided 5% test over ``n_flat`` + ``n_hier`` configurations detects
    with 80% power (normal approximation: (z_.975 + z_.80) · sqrt(1/n1 + 1/n2))."""
    mdd = (Z_975 + Z_80) * (1 / n_flat + 1 / n_hier) ** 0.5
    return {"mdd": mdd, "scale": "d", "text": f"80% power only for |d| ≥ {mdd:.2f} at these n (the paper's d = 1.45)"}


def is_difference(cells: Mapping[str, dict | None], schemes: dict[str, str], min_hits: int) -> dict:
    """Flat − hierarchical IS between the configurations (``cells``: row -> its IS cell) whose IS rests on ≥ ``min_hits`` constrained
    hits (each group's mean), with a normal interval whose standard error comes from each cell's own
    95% interval ((hi − lo) / 2z, over its queries and seeds), and its power: the minimum detectable
    difference at 80% power, (z_.975 + z_.80) · se."""
    groups: dict[str, list[tuple[float, float, int, str]]] = {"flat": [], "hierarchical": []}
    for r, sc in sorted(schemes.items()):
        c = cells.get(r) or {}
        if c.get("value") is None or c.get("few_hits") or (c.get("hits") is not None and c["hits"] < min_hits):
            continue
        se = (c["hi"] - c["lo"]) / (2 * Z_975) if c.get("lo") is not None and c.get("hi") is not None else float("nan")
        groups[sc].append((c["value"], se, c.get("hits") or 0, r))
    mean = {sc: sum(x[0] for x in v) / len(v) for sc, v in groups.items()}
    var = {sc: sum(x[1] ** 2 for x in v) / len(v) ** 2 for sc, v in groups.items()}
    value, se = mean["flat"] - mean["hierarchical"], (var["flat"] + var["hierarchical"]) ** 0.5
    mdd = (Z_975 + Z_80) * se
    text = "; ".join(f"{sc} {', '.join(f'{r} {v:.2f} on {h} hits' for v, _, h, r in xs)}" for sc, xs in groups.items())
    return {"value": value, "lo": value - Z_975 * se, "hi": value + Z_975 * se, "se": se, "text": text,
            "power": {"mdd": mdd, "scale": "IS", "text": f"80% power to detect |flat − hierarchical| ≥ {mdd:.2f} IS at these hits"}}
