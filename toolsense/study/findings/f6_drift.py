"""Finding 6: hierarchical virtual tokens drift less in Stage 2 than flat ones. The ratio of the
groups' mean relative drift gets an interval over runs where each side has two or more
(comparison/drift_stats.py: ``drift_ratio_seeds``), else from a bootstrap over tokens (each run's virtual
rows redrawn from the per-token terms drift.json holds, evaluation/drift.py: row_terms), marked one-seed.
Its table: the ratio per tuning on both drift scales (absolute; each run's divided by its base
vocabulary's, how far the virtual rows moved beyond the rows training was not aimed at)."""

from __future__ import annotations

import math
import statistics
from typing import Any

from toolsense.comparison.drift_stats import drift_ratio_ci, drift_ratio_on_scale, drift_ratio_seeds, drift_terms
from toolsense.comparison.verdicts import combine, verdict
from toolsense.study.findings.base import FindingSpec, TableInput, register
from toolsense.study.findings.tables import table_of
from toolsense.study.sweep import Finding, Settings, Sweep, seed_gate

NUMBER = 6
RULE = ("sign rule on log(flat / hierarchical mean relative Stage-2 drift of the virtual rows), per tuning, with an "
              "interval over runs (seeds) where each side has two or more, else a bootstrap over tokens; untestable without "
              "per-token rows in drift.json for a side of one run, or when a group's virtual rows moved no more than the base "
              "vocabulary (a Stage 2 too short to separate them)")


COL, DCOL = "drift stage1->stage2 virtual", "drift stage1->stage2 Δcos"


DRIFT_SCALES = ("drift_absolute", "drift_base_normalized")


def hierarchical_drift(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(NUMBER, "Hierarchical tokens drift less in Stage 2 than flat ones; their mutual cosine barely changes",
                "7–24× less drift; \\|Δcos\\| < 0.002")
    g = sw.get("grid")
    est, dcos, verdicts, why = {}, [], [], []
    for tun in ("lora", "full"):
        groups = {sch: [p for r in g.rows(tuning=tun, scheme=sch) for p in g.sources(r, COL).values()] if g else []
                  for sch in ("flat", "hierarchical")}
        if not groups["flat"] or not groups["hierarchical"]:
            continue
        dcos += [c["value"] for r in g.rows(tuning=tun, scheme="hierarchical") if (c := g.cell(r, DCOL)) and c.get("value") is not None]
        terms = {sch: [drift_terms(p) for p in paths] for sch, paths in groups.items()}
        seeded = all(t is not None and t["virtual"] > 0 for ts in terms.values() for t in ts) and min(map(len, terms.values())) >= 2
        if not seeded and any(t is None or t["d2"] is None for ts in terms.values() for t in ts):
            flat_v = statistics.mean(c["value"] for r in g.rows(tuning=tun, scheme="flat") if (c := g.cell(r, COL)))
            hier_v = statistics.mean(c["value"] for r in g.rows(tuning=tun, scheme="hierarchical") if (c := g.cell(r, COL)))
            est[tun] = {"value": flat_v / hier_v if hier_v else None, "lo": None, "hi": None}
            verdicts.append("untestable")
            why.append(f"{tun}: drift.json holds no per-token rows (written before they were recorded; rerun "
                       "evaluate.py task=drift), so the ratio has no interval")
            continue
        still = [sch for sch, ts in terms.items() if statistics.mean(t["virtual"] for t in ts) <= statistics.mean(t["base"] for t in ts)]
        if seeded:
            est[tun] = drift_ratio_seeds(terms["flat"], terms["hierarchical"])
        else:  # a side of one run: its tokens are all there is to resample
            est[tun] = {**drift_ratio_ci(terms["flat"], terms["hierarchical"], s.resamples), "one_seed": True,
                        "method": "over tokens alone (a side of one run)"}
        if still:
            verdicts.append("untestable")
            why.append(f"{tun}: the {' and '.join(still)} virtual rows moved no more than the base vocabulary — Stage 2 too "
                       "short to separate the token kinds")
            continue
        verdicts.append(_log_verdict(est[tun]))
    if not est:
        f.why = "needs drift of flat and hierarchical runs (evaluate.drift=true)"
        return f

    def fmt(e: dict) -> str:
        ci = f" [{e['lo']:.1f}, {e['hi']:.1f}]" if e.get("lo") is not None else " (no interval)"
        return ("—" if e.get("value") is None else f"{e['value']:.1f}×") + ci

    f.ours = (", ".join(f"{t}: flat drift {fmt(e)} hierarchical" for t, e in est.items())
              + (f"; hierarchical max \\|Δcos\\| {max(abs(x) for x in dcos):.4f}" if dcos else ""))
    f.verdict = combine(verdicts)
    f.why = "; ".join(why)
    f.details = {"ratio_flat_over_hierarchical": est, "dcos_hierarchical": dcos, "verdicts": verdicts,
                 "rule": RULE}
    return seed_gate(f, {r: len(g.sources(r, COL)) for r in g.rows() if g.sources(r, COL)}, s.min_seeds)


def _log_verdict(est: dict[str, Any] | None) -> str:
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
        own = {tun: drift_ratio_on_scale(terms, scale, resamples) for tun, terms in per.items()}
        verdicts = {tun: _log_verdict(e) for tun, e in own.items()}
        cells[(None, scale)] = {"pooled": next(iter(own.values())) if len(own) == 1 else None,
                                "verdict": combine(list(verdicts.values())), "per_row": own,
                                "per_row_verdict": verdicts}
    return table_of(NUMBER, cells, [None], list(DRIFT_SCALES), list(per), [], 0.0, 0, [],
                  "flat / hierarchical (verdict: every tuning's)")


def _drift_arms(sw: dict[str, Sweep], s: Settings) -> list[tuple[Sweep, str]]:
    """The flat and hierarchical rows of each tuning that has drift of both."""
    g, out = sw.get("grid"), []
    for tun in ("lora", "full") if g else ():
        rows = {sch: [r for r in g.rows(tuning=tun, scheme=sch) if g.sources(r, COL)] for sch in ("flat", "hierarchical")}
        out += [(g, r) for rs in rows.values() for r in rs] if all(rows.values()) else []
    return out


def drift_table(t: TableInput) -> dict[str, Any] | None:
    return drift_sensitivity(t.grid, t.resamples)


register(FindingSpec(NUMBER, RULE, hierarchical_drift, drift_table, compares=_drift_arms, rule_cell=lambda rule: (None, rule.scale)))
