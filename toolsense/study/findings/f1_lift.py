"""Finding 1: Stage 2 lifts verbose-query recall far more than realistic-query recall. The
difference of the two Stage-2 gains (standard − realistic; Stage 2 − Stage 1 of the same runs),
in pp or normalized (the share of Stage 1's misses recovered, net), over the plan's arms that
retrieve, the interval over seeds and queries; and its sensitivity table at every k and scale
(the scales of a gain: comparison/scales.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from toolsense.comparison.scales import gain_contrast
from toolsense.comparison.verdicts import Arms, arms_contrast, arms_diff, arms_gain, verdict
from toolsense.metrics.registry import METRICS
from toolsense.reporting.tables import pct, value_range
from toolsense.study.findings.base import FindingSpec, TableInput, register
from toolsense.study.findings.common import cell_values, finding_rows, floor_only, left_out, seeds_prose
from toolsense.study.findings.tables import depends_on, flips
from toolsense.study.sweep import Finding, Settings, Sweep, below_floor, metric_column, seed_arms, seed_gate
from toolsense.utils.io import DataError

NUMBER = 1
RULE = ("sign rule on the difference of the two Stage-2 gains (standard − realistic), on the scale the plan registers (below; "
        "else normalized): in pp, Stage 2 − Stage 1 Rc@k; normalized, the share of the queries Stage 1 missed that Stage 2 "
        "recovered, net of those it lost (Σ(Stage 2 − Stage 1) / Σ(1 − Stage 1)); each over a configuration's queries and seeds "
        "(the same runs' Stage-1 and Stage-2 evaluations), averaged over configurations, the interval over seeds and queries, "
        "the other scale shown beside it; configurations: the plan's arms for the finding (else all), none below the "
        "retrieval floor (constrained standard Rc@k after Stage 2; named, not averaged in). study=tools revised its rule "
        "from pp to normalized on 2026-12-03, before its TG "
        "seed-1 run was evaluated, because a ceiling bounds a gain in pp (a side Stage 1 takes near 100% gains only its headroom)")


def stage2_lift(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(NUMBER, "Stage 2 lifts verbose-query recall far more than realistic-query recall",
                "G1 Rc 90–96% after Stage 2; RRB gains 2–18 pp")
    g, k = sw.get("grid"), s.k
    rows, below = finding_rows(g, NUMBER, s) if g else ([], [])
    if not rows:
        return floor_only(f, g, below, s) if below else replace(f, why="no Stage-2 rows")
    benches = ("standard", "realistic")
    cols = {b: metric_column(b, "Rc", k) for b in benches}
    arms = {b: {name.partition(":stage1")[0]: v for name, v in seed_arms([(g, f"{r}:stage1", g, r) for r in rows],
                                                                            cols[b], METRICS.key("Rc", k), same_runs=True).items()}
            for b in benches}
    if not all(arms.values()):
        f.why = "no Stage-1 evaluations of the same runs (evaluate.stages=[stage1,stage2])"
        return f
    std, real = (arms_diff(arms[b], s.resamples) for b in benches)
    diff = arms_contrast(arms["standard"], arms["realistic"], s.resamples)
    norm = arms_gain(arms["standard"], arms["realistic"], s.resamples)
    unit, runs = _per_run_gains(arms, s.resamples)
    in_pp = (f"Stage-2 gain in pp (Stage 2 − Stage 1 Rc@{k}): standard {pct(std, True)}, realistic {pct(real, True)}, "
             f"difference {pct(diff, True)}")
    as_share = (f"as the share of Stage 1's misses recovered (net): standard {pct(norm and norm['first'])}, realistic "
                f"{pct(norm and norm['second'])}, difference {pct(norm, True)} (per {unit}: {runs or '—'})")
    first, second = (in_pp, as_share) if s.gain_scale == "pp" else (f"Stage-2 gain {as_share}", f"in pp: {in_pp}")
    f.ours = (f"{first}; {second}; mean over {len(rows)} configuration{'s' * (len(rows) != 1)}, standard Rc@{k} after "
              f"Stage 2 {value_range(cell_values(g, rows, cols['standard']))}; paired per query and run; {seeds_prose(norm)}")
    f.verdict = verdict(diff if s.gain_scale == "pp" else norm)
    f.ours += f"; the verdict rests on the difference {'in pp' if s.gain_scale == 'pp' else 'of the normalized gains'}"
    f.ours += f"; {left_out(g, below, s)}" if below else ""
    f.details = {"lift_standard": std, "lift_realistic": real, "lift_difference": diff, "normalized_gain": norm,
                 f"per_{unit}": runs, "absolute_rule_verdict": verdict(diff), "rule": RULE,
                 "per_configuration": {r: {b: (g.cell(r, cols[b]) or {}).get("value") for b in benches} for r in rows + below},
                 "below_floor": below}
    return seed_gate(f, {r: len(a) for r, (a, _) in arms["standard"].items()}, s.min_seeds)


def _per_run_gains(arms: dict[str, Arms], resamples: int, most: int = 4) -> tuple[str, str]:
    """("run", each run's normalized-gain difference (standard − realistic) with its interval, as
    ``row sN +x.x pp [lo, hi]``), or with more than ``most`` runs ("configuration", each
    configuration's over its seeds); ``arms``: bench -> row -> (Stage-1 runs, Stage-2 runs) by seed."""
    std, real = arms["standard"], arms["realistic"]
    runs = [(f"{r} s{seed}", r, [seed]) for r in std if r in real for seed in sorted(std[r][0]) if seed in real[r][0]]
    units = runs if len(runs) <= most else [(r, r, sorted(std[r][0])) for r in std if r in real]

    def part(side: Arms, r: str, seeds: list) -> Arms:
        return {r: tuple({x: side[r][i][x] for x in seeds if x in side[r][i]} for i in (0, 1))}

    ests = [(name, arms_gain(part(std, r, seeds), part(real, r, seeds), resamples)) for name, r, seeds in units]
    return ("run" if units is runs else "configuration"), ", ".join(f"{name} {pct(est, True)}" for name, est in ests if est)


def _stage_runs(g: Sweep, row: str, col: str, k: int) -> dict[int, tuple[dict, dict]]:
    """A row's runs in ``col`` by seed: (Stage 1's, Stage 2's) per-item hits at ``k``, the seeds both evaluations hold."""
    arms = seed_arms([(g, f"{row}:stage1", g, row)], col, METRICS.key("Rc", k), same_runs=True)
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
            per_row = {b: {r: _stage_runs(g, r, metric_column(b, "Rc", k_table), k) for r in rows} for b in ("standard", "realistic")}
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
            "stable": not flips(by_k), "not_evaluated": not_evaluated, "rows": list(rows), "finding": NUMBER}


def lift_table(t: TableInput) -> dict[str, Any] | None:
    """The table over the plan's arms, where the grid has Stage-1 evaluations of them."""
    rows = t.arms(NUMBER)
    if not rows or not any(t.grid.cell(f"{r}:stage1", metric_column("standard", "Rc", t.k_table)) for r in rows):
        return None
    return lift_sensitivity(t.grid, rows, t.ks, t.scales, t.plan.retrieval_floor, t.k_table)


def _gain_scale(s: Settings, rule) -> Settings:
    """The registered scale of the verdict: pp, else the normalized gains."""
    return replace(s, gain_scale="pp" if str(rule.scale) == "pp" else "normalized")


register(FindingSpec(NUMBER, RULE, stage2_lift, lift_table, configure=_gain_scale))
