"""Finding 3: flat configurations keep a higher Internalization Score on realistic queries than
hierarchical ones. Cohen's d of realistic IS@k over configurations (comparison/cell_stats.py), else
flat − hierarchical IS of the runs that have enough constrained hits, each with its power; and its
table: the finding read at every k of the plan."""

from __future__ import annotations

from typing import Any

from toolsense.comparison.cell_stats import EFFECT_UNIT, d_power, effect_size, is_difference
from toolsense.comparison.verdicts import verdict
from toolsense.metrics.registry import METRICS
from toolsense.reporting.tables import value_range
from toolsense.study.findings.base import FindingSpec, TableInput, register
from toolsense.study.findings.tables import depends_on
from toolsense.study.sweep import Finding, Settings, Sweep, metric_column, seed_gate

NUMBER = 3
RULE = (f"sign rule on Cohen's d of realistic IS@k, flat − hierarchical, over {EFFECT_UNIT}, with a bootstrap interval over "
        "configurations, beside the smallest d it detects with 80% power; where a group keeps fewer than 2 configurations with at least "
        "`min_hits` constrained hits, the sign rule on flat − hierarchical IS of those runs (a normal interval from each cell's "
        "own, over its queries and seeds) with the minimum detectable difference at 80% power; untestable only where a group "
        "keeps none")


def flat_vs_hierarchical_is(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(NUMBER, "Flat configurations keep a higher Internalization Score on realistic queries than hierarchical ones",
                "IS 0.75–0.85 flat vs 0.33–0.79 hierarchical; Cohen's d = 1.45")
    g, k = sw.get("grid"), s.k
    col = metric_column("realistic", "IS", k)
    rows = g.rows() if g else []
    schemes = {r: g.comp["schemes"].get(r) for r in rows if g.comp["schemes"].get(r) in ("flat", "hierarchical")} if g else {}
    if not all(sum(v == sc for v in schemes.values()) for sc in ("flat", "hierarchical")):
        f.why = "needs a flat and a hierarchical configuration"
        return f
    d = effect_size(g.comp["cells"], schemes, [col], METRICS.key("IS", k), s.resamples)
    flat, hier = d["flat"], d["hierarchical"]
    f.details = {**d, "rule": RULE}
    gate = {r: (g.cell(r, col) or {}).get("n_seeds") or 1 for r in schemes}
    if not flat or not hier:
        f.verdict = "untestable"
        f.why = (f"a group has no configuration whose IS rests on ≥ {s.min_hits} constrained hits ({len(flat)} flat, "
                 f"{len(hier)} hierarchical; left out: {'; '.join(d['excluded']) or 'none'})")
        f.ours = f"IS@{k} {value_range(flat, 1, '', 2)} flat vs {value_range(hier, 1, '', 2)} hierarchical (usable configurations)"
        return f
    if len(flat) < 2 or len(hier) < 2 or d.get("d") is None:  # no d over configurations: the runs' own difference
        diff = is_difference({r: g.cell(r, col) for r in schemes}, schemes, s.min_hits)
        f.details.update(difference=diff, power=diff["power"])
        f.ours = (f"IS@{k} flat − hierarchical {diff['value']:+.2f} [{diff['lo']:.2f}, {diff['hi']:.2f}] ({diff['text']}); "
                  f"it points {'the paper’s way' if diff['value'] > 0 else 'the other way'}; {diff['power']['text']}")
        f.verdict = verdict(diff)
        f.why = (f"{len(flat)} flat and {len(hier)} hierarchical configuration(s) with ≥ {s.min_hits} hits: no Cohen's d over "
                 "configurations; the interval covers the queries of these runs only, not other configurations")
        return seed_gate(f, gate, s.min_seeds)
    ci = f" [{d['lo']:.2f}, {d['hi']:.2f}]" if d.get("lo") is not None else ""
    power = d_power(len(flat), len(hier))
    f.details["power"] = power
    f.ours = (f"IS@{k} {value_range(flat, 1, '', 2)} flat vs {value_range(hier, 1, '', 2)} hierarchical; d = {d['d']:.2f}{ci} "
              f"(n = {len(flat)} + {len(hier)} configurations" + (f"; {len(d['excluded'])} few-hit IS left out" if d["excluded"] else "")
              + f"; {power['text']})")
    f.verdict = verdict({"value": d["d"], "lo": d.get("lo"), "hi": d.get("hi")})
    return seed_gate(f, gate, s.min_seeds)


def is_sensitivity(g: Sweep, ks: list[int], resamples: int, min_hits: int = 10) -> dict[str, Any] | None:
    """Finding 3 at each k: the finding on the sweep read at that k, its estimate (Cohen's d over configurations,
    else flat − hierarchical IS) and verdict; a k where it is untestable (too few hits) is listed as not evaluated."""
    cells, not_evaluated = {}, []
    for k in ks:
        f = flat_vs_hierarchical_is({"grid": Sweep(g.name, g.path, k, resamples, min_hits)},
                        Settings(k=k, resamples=resamples, min_hits=min_hits, min_seeds=1))
        est = f.details.get("difference") or ({"value": f.details["d"], "lo": f.details.get("lo"), "hi": f.details.get("hi")}
                                              if f.details.get("d") is not None else None)
        if f.verdict in ("untestable", "n/a") or est is None:
            not_evaluated.append(k)
            continue
        scale = "IS" if "difference" in f.details else "d"
        cells[(k, scale)] = {"pooled": est, "verdict": f.verdict, "per_row": {}, "per_row_verdict": {}}
    return {"finding": NUMBER, "cells": cells, "rows": [], "below_floor": [], "floor": 0.0, "k_table": 0,
            "depends_on": depends_on({(k, "x"): c for (k, _), c in cells.items()}, [k for k, _ in cells], ["x"]),
            "not_evaluated": not_evaluated, "pooled_label": "flat − hierarchical (IS points, or Cohen's d over configurations)"}


def _is_arms(sw: dict[str, Sweep], s: Settings) -> list[tuple[Sweep, str]]:
    g = sw.get("grid")
    return [(g, r) for r in g.rows() if g.comp["schemes"].get(r) in ("flat", "hierarchical")] if g else []


def is_table(t: TableInput) -> dict[str, Any] | None:
    """The table where the plan registers a rule for this finding."""
    return is_sensitivity(t.grid, list(t.ks), t.resamples) if NUMBER in t.plan.findings else None


register(FindingSpec(NUMBER, RULE, flat_vs_hierarchical_is, is_table, compares=_is_arms))
