"""The statistics of an ablation table's cells (compare.py): a configuration's cell pooled over
its seeds and clustered by item, the IS of pooled seeds, knowledge retention paired per item, and
Cohen's d between flat and hierarchical configurations with its one stated unit of observation
(read identically by ``compare.py`` and by the report's finding 3)."""

from __future__ import annotations

from typing import Any, Sequence

from toolsense.evaluation.metrics import bootstrap_indices, is_ci, wilson_ci
from toolsense.comparison.runs import item_values, run_dir_of
from toolsense.comparison.stats import cluster_bootstrap, cohens_d_ci, mean_sd, paired_diff


def combine_seeds(metric: str | None, entries: Sequence[tuple[dict | None, dict]], resamples: int, seed: int,
                  min_hits: int = 10) -> dict | None:
    """One cell from the runs (seeds) of one configuration, recomputed from their per-item
    samples where every run has them: the pooled estimate with a 95% (and 90%) interval over
    resampled *items*, each with all its seeds (stats.cluster_bootstrap; IS@k the ratio of pooled
    free-form to constrained hits, ``few_hits`` under ``min_hits``); one run's IS by
    metrics.is_ci (Wilson where free-form hits are constrained hits). Several runs also carry the
    sd over seeds and ``n_seeds``. Without samples: a single run's estimate as written, several
    runs' mean ± sd with no interval."""
    present = [(est, res) for est, res in entries if est and est.get("value") is not None]
    if not present:
        return None
    cell = dict(present[0][0])
    if len(present) > 1:
        mean, sd = mean_sd([est["value"] for est, _ in present])
        cell.update(value=mean, sd=sd, n_seeds=len(present), lo=None, hi=None)
    per = [item_values(res["_path"], metric) for _, res in present] if metric else [None]
    if any(p is None or not p for p in per):
        return cell
    if metric.startswith("IS@"):
        if len(per) == 1:
            f, c = zip(*per[0].values())
            ci = is_ci(f, c, bootstrap_indices(len(f), resamples, seed), min_hits=min_hits)
        else:
            ci = pooled_is(per, resamples, seed, min_hits)
    else:
        ci = cluster_bootstrap(per, resamples, seed)
    cell.update({k: v for k, v in ci.items() if k != "undefined" or v})
    return cell


def pooled_is(per: Sequence[dict[str, tuple[float, float]]], resamples: int, seed: int, min_hits: int) -> dict[str, Any]:
    """IS of several seeds (``per``: item -> (free hit, constrained hit) per seed): the ratio of
    pooled sums with the cluster-bootstrap interval (stats.cluster_bootstrap). Where every free
    hit is a constrained hit (a flat index) IS is a proportion, and the interval is widened to
    hold the Wilson interval of that proportion over the items with a constrained hit (the
    clusters), so that a few items whose every seed hits (or misses) give no zero-width interval."""
    ci = cluster_bootstrap([{i: fc[0] for i, fc in p.items()} for p in per], resamples, seed,
                           denominators=[{i: fc[1] for i, fc in p.items()} for p in per], min_hits=min_hits)
    if ci["hits"] and all(f <= c for p in per for f, c in p.values()):
        n_items = len({i for p in per for i, (_, c) in p.items() if c})
        lo, hi = wilson_ci(ci["value"] * n_items, n_items)
        ci.update(lo=lo if ci["lo"] is None else min(lo, ci["lo"]), hi=hi if ci["hi"] is None else max(hi, ci["hi"]),
                  method="wilson over items, cluster bootstrap")
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
            est = paired_diff(pairs, resamples, seed)
            if est is None:
                continue
            name = f"retention {col[: -len(' acc')]} Δacc"
            if name not in cols:
                cols.append(name)
            cells.setdefault(m["base"], {})[name] = est
    return cols


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
