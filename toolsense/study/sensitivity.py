"""How a verdict moves with k and with the scale (issue 34): finding 1's Stage-2 gain contrast
(standard − realistic) recomputed at every k of ``analysis.sensitivity_ks`` on every scale of
``analysis.sensitivity_scales``, per configuration and averaged over the configurations that
retrieve (constrained standard Rc@k after Stage 2 at or above ``analysis.retrieval_floor``; the
others are listed, not averaged in). A verdict that is not the same in every cell "depends on k"
or "depends on the scale" — the report says which, beside the registered one.

Scales of one side's gain over its items (a: Stage 1's per-item hit, b: Stage 2's, n items):
``pp`` = Σ(b − a) / n; ``normalized`` = Σ(b − a) / Σ(1 − a) (the share of Stage 1's misses
recovered, net); ``log_odds`` = logit((Σb + ½) / (n + 1)) − logit((Σa + ½) / (n + 1))
(comparison/scales.py). Intervals treat seeds and items as the two sampled levels (a run scored on
both sides one unit), as the finding's headline does.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from toolsense.comparison.scales import gain_contrast
from toolsense.reporting.tables import markdown_table, pct, seeds_text
from toolsense.study.sweep import Sweep, below_floor, seed_arms, verdict
from toolsense.utils.io import DataError


def depends_on(cells: Mapping[tuple[Any, str], Mapping[str, Any]], ks: Sequence[Any],
               scales: Sequence[str]) -> list[str]:
    """"k" and / or "the scale" where a cell's verdict differs along that axis of the table."""
    present = [(k, s) for k in ks for s in scales if (k, s) in cells]
    ks = list(dict.fromkeys(k for k, _ in present))
    scales = list(dict.fromkeys(s for _, s in present))
    along_k = any(_flip([cells[(k, s)]["verdict"] for k in ks if (k, s) in cells]) for s in scales)
    along_s = any(_flip([cells[(k, s)]["verdict"] for s in scales if (k, s) in cells]) for k in ks)
    return [w for w, flips in (("k", along_k), ("the scale", along_s)) if flips]


def _flip(verdicts: Sequence[str]) -> bool:
    return len({v.split(" ")[0] for v in verdicts if v != "n/a"}) > 1


def _stage_runs(g: Sweep, row: str, col: str, k: int) -> dict[int, tuple[dict, dict]]:
    """A row's runs in ``col`` by seed: (Stage 1's, Stage 2's) per-item hits at ``k``, the seeds both evaluations hold."""
    arms = seed_arms([(g, f"{row}:stage1", g, row)], col, f"Rc@{k}", same_runs=True)
    return {s: (a[s], b[s]) for a, b in arms.values() for s in a}


def lift_sensitivity(g: Sweep, rows: Sequence[str], ks: Sequence[int], scales: Sequence[str], floor: float,
                     k_table: int = 5) -> dict[str, Any]:
    """Finding 1 at every (k, scale): the pooled contrast over the rows that retrieve (constrained
    standard Rc@``k_table`` — the study's k, the table's column — at or above ``floor``), each
    row's own, the rows below, and whether the verdict depends on k or on the scale. Per-item hits
    at every k come from the samples (each sample holds every cut-off of ``metrics.ks``)."""
    cells: dict[tuple[int, str], dict[str, Any]] = {}
    below = below_floor(g, rows, floor, k_table)
    keep = [r for r in rows if r not in below]
    not_evaluated = []
    for k in ks:
        try:
            per_row = {b: {r: _stage_runs(g, r, f"{b} Rc@{k_table}", k) for r in rows} for b in ("standard", "realistic")}
        except DataError:  # the samples hold no hit at this k (metrics.ks did not list it)
            not_evaluated.append(k)
            continue
        for scale in scales:
            pooled = gain_contrast({r: per_row["standard"][r] for r in keep}, {r: per_row["realistic"][r] for r in keep},
                                   scale)
            own = {r: gain_contrast({r: per_row["standard"][r]}, {r: per_row["realistic"][r]}, scale) for r in rows}
            cells[(k, scale)] = {"pooled": pooled, "verdict": verdict(pooled), "per_row": own,
                                 "per_row_verdict": {r: verdict(e) for r, e in own.items()}}
    ks = [k for k in ks if k not in not_evaluated]
    by_k = [cells[(k, s)]["verdict"] for s in scales for k in ks]
    return {"cells": cells, "below_floor": below, "floor": floor, "k_table": k_table,
            "depends_on": depends_on(cells, ks, scales),
            "stable": not _flip(by_k), "not_evaluated": not_evaluated, "rows": list(rows), "finding": 1}


def _fmt(est: dict[str, Any] | None, scale: str) -> str:
    if not est or est.get("value") is None:
        return pct(est, True)
    if scale.startswith("drift"):  # a ratio (flat / hierarchical)
        ci = f" [{est['lo']:.2f}, {est['hi']:.2f}]" if est.get("lo") is not None else " (no interval)"
        return f"{est['value']:.2f}×{ci}"
    if scale in ("IS", "d"):  # an IS difference or an effect size: plain numbers
        ci = f" [{est['lo']:+.2f}, {est['hi']:+.2f}]" if est.get("lo") is not None else ""
        return f"{est['value']:+.2f}{ci}"
    if scale != "log_odds":
        return pct(est, True)
    ci = f" [{est['lo']:+.2f}, {est['hi']:+.2f}]" if est.get("lo") is not None else ""
    return f"{est['value']:+.2f} logit{ci}{seeds_text(est, pct=False)}"


def sensitivity_markdown(sens: dict[str, Any], ks: Sequence[Any] | None = None, scales: Sequence[str] | None = None,
                         rows: Sequence[str] | None = None) -> str:
    """One table: a row per (k, scale) — in ``ks`` x ``scales`` order where given, else the cells' —
    the pooled estimate with its verdict, then each configuration's (``rows``, default ``sens["rows"]``)."""
    cells, rows = sens["cells"], list(rows if rows is not None else sens.get("rows", []))
    order = list(cells) if ks is None or scales is None else [(k, s) for k in ks for s in scales if (k, s) in cells]

    def cell(c: Mapping[str, Any], scale: str, r: str | None) -> str:
        if r is None:
            return f"{_fmt(c['pooled'], scale)} {c['verdict']}"
        return f"{_fmt(c['per_row'].get(r), scale)} {c['per_row_verdict'].get(r, 'n/a')}"
    table = [["—" if k is None else k, scale, *(cell(cells[(k, scale)], scale, r) for r in (None, *rows))]
             for k, scale in order]
    say = ("the verdict depends on " + " and on ".join(sens["depends_on"])) if sens["depends_on"] else "the verdict holds in every cell"
    below = ", ".join(sens.get("below_floor") or [])
    if sens.get("not_evaluated"):
        say += f" (k = {', '.join(map(str, sens['not_evaluated']))} not evaluated: too few hits there)"
    floor = (f" Below the retrieval floor (standard Rc@{sens['k_table']} < {100 * sens['floor']:.0f}%; "
             "shown, not pooled): "
             f"{below}." if below else "")
    pooled = sens.get("pooled_label", "pooled (configurations that retrieve)")
    return (markdown_table(["k", "scale", pooled, *rows], table)
            + f"\nFinding {sens.get('finding', 1)} across k and scales: {say}.{floor}\n")
