"""Finding 2: realistic queries collapse against verbose ones, and the dense baseline beats the best
parametric model on realistic queries. Both parts by the sign rule (the collapse's verdict where it
is not yes), over the plan's arms that retrieve; and its sensitivity table: the collapse per
configuration (each side's items drawn on its own) and dense − best parametric (paired per query)."""

from __future__ import annotations

from typing import Any, Sequence

from toolsense.comparison.runs import item_values
from toolsense.comparison.scales import rate_contrast
from toolsense.comparison.verdicts import arms_contrast, arms_diff, verdict
from toolsense.metrics.registry import METRICS
from toolsense.reporting.tables import pct
from toolsense.study.findings.base import FindingSpec, TableInput, register
from toolsense.study.findings.common import finding_rows, floor_only, left_out, runs_at, seeds_prose
from toolsense.study.findings.tables import table_of
from toolsense.study.sweep import Finding, Settings, Sweep, below_floor, metric_column, seed_gate
from toolsense.utils.io import DataError

NUMBER = 2
RULE = ("both parts by the sign rule: the collapse (standard − realistic Rc@k over configurations, over seeds and queries) "
        "and dense − best parametric run on realistic Rc@k (paired per query); the collapse's verdict where it is not yes; "
        "configurations as in finding 1 (the plan's arms, none below the retrieval floor)")


def _runs(g: Sweep, row: str, col: str, metric: str) -> dict[int, dict]:
    """A row's runs in a column: ``trainer.seed -> item id -> value`` (runs without samples left out)."""
    return {seed: v for seed, p in g.sources(row, col).items() if (v := item_values(p, metric)) is not None}


def realistic_collapse(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(NUMBER, "Realistic queries collapse against verbose ones; "
                "the dense baseline beats the best parametric model on realistic queries",
                "TG-3FM 44.4% vs te3l 55.6% (BM25 32.4%) on the RRB")
    g, k = sw.get("grid"), s.k
    rows, below = finding_rows(g, NUMBER, s) if g else ([], [])
    dense, bm25 = (g.baseline("dense"), g.baseline("bm25")) if g else (None, None)
    if not rows and below and dense:
        return floor_only(f, g, below, s)
    if not rows or not dense:
        f.why = "no Stage-2 rows or no dense baseline"
        return f
    col, metric = metric_column("realistic", "Rc", k), METRICS.key("Rc", k)
    best = max(rows, key=lambda r: (g.cell(r, col) or {}).get("value") or -1)
    d_path = next(iter(g.sources(dense, col).values()), None)
    d_items = item_values(d_path, metric) if d_path else None
    # a mean as a "difference from 0": each run of a row against zeros on its own items (the same seeds: paired)
    per = {b: {r: ({x: {i: 0.0 for i in v} for x, v in runs.items()}, runs) for r in rows
               if (runs := _runs(g, r, metric_column(b, "Rc", k), metric))} for b in ("standard", "realistic")}
    collapse = arms_contrast(per["standard"], per["realistic"], s.resamples)
    best_runs = _runs(g, best, col, metric)
    # dense − best: the deterministic baseline stands beside every run of the best row (one seed draw moves both)
    margin = arms_diff({best: (best_runs, {x: d_items for x in best_runs})}, s.resamples) if d_items and best_runs else None
    d_cell, b_cell, best_cell = g.cell(dense, col), g.cell(bm25, col) if bm25 else None, g.cell(best, col)
    f.ours = (f"Rc@{k} over configurations: standard − realistic {pct(collapse, True)}; best parametric ({best}) {pct(best_cell)} "
              f"vs dense (MiniLM) {pct(d_cell)}, BM25 {pct(b_cell)}; dense − best {pct(margin, True)} (paired per query; "
              f"{seeds_prose(collapse)})" + (f"; {left_out(g, below, s)}" if below else ""))
    parts = [verdict(collapse), verdict(margin)]
    f.verdict = parts[0] if parts[0] != "yes" else parts[1]
    if parts[0] != "yes":
        f.why = f"the collapse itself is {parts[0]}: realistic recall is not clearly below standard recall"
    f.details = {"collapse": collapse, "dense_minus_best": margin, "best": best, "verdicts": parts, "rule": RULE,
                 "below_floor": below}
    return seed_gate(f, {r: len(a) for r, (a, _) in per["realistic"].items()}, s.min_seeds)


def collapse_sensitivity(g: Sweep, rows: Sequence[str], ks: Sequence[int], scales: Sequence[str], floor: float,
                         k_table: int = 5) -> dict[str, Any] | None:
    """Finding 2 at every (k, scale) over ``rows`` (the grid's Stage-2 rows in the rule's arms); None without any."""
    rows = list(rows)
    if not rows:
        return None
    below = below_floor(g, rows, floor, k_table)
    keep = [r for r in rows if r not in below]
    best = max(keep or rows, key=lambda r: (g.cell(r, metric_column("realistic", "Rc", k_table)) or {}).get("value") or -1)
    dense = g.baseline("dense")
    cells, not_evaluated = {}, []
    for k in ks:
        try:
            real, std = ({r: runs_at(g, r, metric_column(b, "Rc", k_table), k) for r in rows} for b in ("realistic", "standard"))
            d_runs = runs_at(g, dense, metric_column("realistic", "Rc", k_table), k) if dense else {}
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
    return table_of(NUMBER, cells, ks, scales, [*rows, f"dense − {best}"], below, floor, k_table, not_evaluated,
                  "collapse, pooled (configurations that retrieve); verdict as the finding's")


def collapse_table(t: TableInput) -> dict[str, Any] | None:
    return collapse_sensitivity(t.grid, t.arms(NUMBER), t.ks, t.scales, t.plan.retrieval_floor, t.k_table)


register(FindingSpec(NUMBER, RULE, realistic_collapse, collapse_table))
