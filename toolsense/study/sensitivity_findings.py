"""Sensitivity tables of findings 2, 6 and 7 (finding 1's is sensitivity.lift_sensitivity): each
finding's contrast recomputed at every k of ``analysis.sensitivity_ks`` on every scale of
``analysis.sensitivity_scales`` (drift: absolute and base-normalized), per configuration and pooled
over those that retrieve (constrained standard Rc@k of the study's k at or above
``analysis.retrieval_floor``; the others listed, not pooled). Intervals treat seeds and items as the
two sampled levels, as the findings' headlines do (comparison/scales.py: rate_contrast).

- 2: the collapse, standard − realistic Rc@k per configuration (each side's items drawn on its own),
  and dense − best parametric on realistic Rc@k (paired per query); the collapse's verdict where it is
  not yes, else the margin's — the finding's own rule.
- 6: log(flat / hierarchical) Stage-2 drift of the virtual rows per tuning; ``drift_absolute`` the
  mean relative drift, ``drift_base_normalized`` each run's divided by its base vocabulary's (how far
  the virtual rows moved beyond the rows training was not aimed at).
- 7: App. E − TG Rc@k on the items both runs' Stage 2 covered (all items where coverage is unknown),
  realistic expected up and standard down, paired per item and seed; yes when both parts are.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from toolsense.comparison.drift_stats import drift_ratio_ci, drift_ratio_seeds, drift_terms
from toolsense.comparison.runs import item_values
from toolsense.comparison.scales import rate_contrast
from toolsense.study.drift_finding import COL
from toolsense.study.findings import _covered_arms
from toolsense.study.sensitivity import depends_on
from toolsense.study.sweep import Sweep, below_floor, combine, conjunction, seed_arms, verdict
from toolsense.utils.io import DataError

DRIFT_SCALES = ("drift_absolute", "drift_base_normalized")


def _runs_at(g: Sweep, row: str, col: str, k: int) -> dict[int, dict]:
    """A row's runs in ``col`` at cut-off ``k``: seed -> item id -> hit (DataError: no hits at k)."""
    out = {s: v for s, p in g.sources(row, col).items() if (v := item_values(p, f"Rc@{k}")) is not None}
    if out and any(not v for v in out.values()):
        raise DataError(f"{row} | {col}: no per-item Rc@{k}")
    return out


def _table(finding: int, cells: dict, ks: Sequence[Any], scales: Sequence[str], rows: list[str], below: list[str],
           floor: float, k_table: int, not_evaluated: list, label: str) -> dict[str, Any]:
    return {"finding": finding, "cells": cells, "rows": rows, "below_floor": below, "floor": floor, "k_table": k_table,
            "depends_on": depends_on(cells, [k for k in ks if k not in not_evaluated], scales),
            "not_evaluated": not_evaluated, "pooled_label": label}


def collapse_sensitivity(g: Sweep, rows: Sequence[str], ks: Sequence[int], scales: Sequence[str], floor: float,
                         k_table: int = 5) -> dict[str, Any] | None:
    """Finding 2 at every (k, scale) over ``rows`` (the grid's Stage-2 rows in the rule's arms); None without any."""
    rows = list(rows)
    if not rows:
        return None
    below = below_floor(g, rows, floor, k_table)
    keep = [r for r in rows if r not in below]
    best = max(keep or rows, key=lambda r: (g.cell(r, f"realistic Rc@{k_table}") or {}).get("value") or -1)
    dense = g.baseline("dense")
    cells, not_evaluated = {}, []
    for k in ks:
        try:
            real, std = ({r: _runs_at(g, r, f"{b} Rc@{k_table}", k) for r in rows} for b in ("realistic", "standard"))
            d_runs = _runs_at(g, dense, f"realistic Rc@{k_table}", k) if dense else {}
        except DataError:
            not_evaluated.append(k)
            continue
        d_items = next(iter(d_runs.values()), None)
        for scale in scales:
            pooled = rate_contrast({r: (real[r], std[r]) for r in keep}, scale, False)
            own = {r: rate_contrast({r: (real[r], std[r])}, scale, False) for r in rows}
            margin = (rate_contrast({best: (real[best], {s: d_items for s in real[best]})}, scale, True)
                      if d_items and real[best] else None)
            parts = [verdict(pooled), verdict(margin)]
            own[f"dense − {best}"] = margin
            cells[(k, scale)] = {"pooled": pooled, "verdict": parts[0] if parts[0] != "yes" else parts[1],
                                 "per_row": own,
                                 "per_row_verdict": {r: verdict(e) for r, e in own.items()}}
    return _table(2, cells, ks, scales, [*rows, f"dense − {best}"], below, floor, k_table, not_evaluated,
                  "collapse, pooled (configurations that retrieve); verdict as the finding's")


def appendix_e_sensitivity(g: Sweep, e: Sweep, ks: Sequence[int], scales: Sequence[str], floor: float,
                           k_table: int = 5) -> dict[str, Any] | None:
    """Finding 7 at every (k, scale); None without a TG row of the same tuning as an App. E row."""
    pairs = [(g, a, e, b) for b in e.rows() for a in g.rows(experiment="tg", tuning=b.rpartition("-")[2])]
    if not pairs:
        return None
    below = below_floor(g, sorted({p[1] for p in pairs}), floor, k_table)
    keep = [p for p in pairs if p[1] not in below]
    labels = [f"{p[1]} → {p[3]} {b}" for p in pairs for b in ("realistic", "standard")]
    cells, not_evaluated = {}, []
    for k in ks:
        try:
            arms = {}
            for b in ("realistic", "standard"):
                col = f"{b} Rc@{k_table}"
                covered, _ = _covered_arms(pairs, col, f"Rc@{k}")
                arms[b] = covered or seed_arms(pairs, col, f"Rc@{k}")
        except DataError:
            not_evaluated.append(k)
            continue
        kept = {f"{p[1]} → {p[3]}" for p in keep}
        for scale in scales:
            est = {b: rate_contrast({n: a for n, a in arms[b].items() if n in kept}, scale, True, up=b == "realistic")
                   for b in arms}
            own = {f"{n} {b}": rate_contrast({n: a}, scale, True, up=b == "realistic")
                   for b in arms for n, a in arms[b].items()}
            cells[(k, scale)] = {"pooled": est["realistic"], "pooled_standard": est["standard"],
                                 "verdict": conjunction([verdict(est["realistic"]),
                                                         verdict(est["standard"], expect_positive=False)]),
                                 "per_row": own,
                                 "per_row_verdict": {n: verdict(x, expect_positive=n.endswith("realistic"))
                                                     for n, x in own.items()}}
    return _table(7, cells, ks, scales, labels, below, floor, k_table, not_evaluated,
                  "realistic App. E − TG, pooled (verdict: both parts)")


def _drift_ratio(terms: dict[str, list[dict]], scale: str, resamples: int) -> dict[str, Any] | None:
    """flat / hierarchical mean drift on ``scale``: over runs where both sides have two or more, else
    over one run's tokens (base drift a constant of each run), else the point alone."""
    if any(t is None for ts in terms.values() for t in ts):
        return None
    norm = scale == "drift_base_normalized"
    if min(map(len, terms.values())) >= 2:
        scaled = {sch: [{"virtual": t["virtual"] / t["base"] if norm else t["virtual"]} for t in ts]
                  for sch, ts in terms.items()}
        return drift_ratio_seeds(scaled["flat"], scaled["hierarchical"])
    base = {sch: statistics.mean(t["base"] for t in ts) for sch, ts in terms.items()}
    factor = base["hierarchical"] / base["flat"] if norm else 1.0
    if all(t["d2"] is not None for ts in terms.values() for t in ts):
        est = drift_ratio_ci(terms["flat"], terms["hierarchical"], resamples)
    else:
        est = {"value": statistics.mean(t["virtual"] for t in terms["flat"])
               / statistics.mean(t["virtual"] for t in terms["hierarchical"]), "lo": None, "hi": None}
    return {x: (v * factor if v is not None else None) for x, v in est.items()}


def _log_verdict(est: dict[str, Any] | None) -> str:
    import math

    if not est:
        return "n/a"
    return verdict({x: (math.log(v) if (v := est.get(x)) and v > 0 else None) for x in ("value", "lo", "hi")})


def drift_sensitivity(g: Sweep, resamples: int) -> dict[str, Any] | None:
    """Finding 6 on both drift scales, per tuning (the verdict: every tuning's, combined); None without
    drift of a flat and a hierarchical run of one tuning."""
    per: dict[str, dict[str, list]] = {}
    for tun in ("lora", "full"):
        paths = {sch: [p for r in g.rows(tuning=tun, scheme=sch) for p in g.sources(r, COL).values()]
                 for sch in ("flat", "hierarchical")}
        if all(paths.values()):
            per[tun] = {sch: [drift_terms(p) for p in ps] for sch, ps in paths.items()}
    if not per:
        return None
    cells = {}
    for scale in DRIFT_SCALES:
        own = {tun: _drift_ratio(terms, scale, resamples) for tun, terms in per.items()}
        verdicts = {tun: _log_verdict(e) for tun, e in own.items()}
        cells[(None, scale)] = {"pooled": next(iter(own.values())) if len(own) == 1 else None,
                                "verdict": combine(list(verdicts.values())), "per_row": own,
                                "per_row_verdict": verdicts}
    return _table(6, cells, [None], list(DRIFT_SCALES), list(per), [], 0.0, 0, [],
                  "flat / hierarchical (verdict: every tuning's)")
