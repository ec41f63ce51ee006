"""Finding 6: hierarchical virtual tokens drift less in Stage 2 than flat ones. The ratio of the
groups' mean relative drift gets an interval over runs where each side has two or more
(comparison/drift_stats.py: ``drift_ratio_seeds``), else from a bootstrap over tokens (each run's virtual
rows redrawn from the per-token terms drift.json holds, evaluation/drift.py: row_terms), marked one-seed."""

from __future__ import annotations

import math
import statistics

from toolsense.comparison.drift_stats import drift_ratio_ci, drift_ratio_seeds, drift_terms
from toolsense.study.sweep import Finding, Settings, Sweep, combine, seed_gate, verdict

DRIFT_RULE = ("sign rule on log(flat / hierarchical mean relative Stage-2 drift of the virtual rows), per tuning, with an "
              "interval over runs (seeds) where each side has two or more, else a bootstrap over tokens; untestable without "
              "per-token rows in drift.json for a side of one run, or when a group's virtual rows moved no more than the base "
              "vocabulary (a Stage 2 too short to separate them)")
COL, DCOL = "drift stage1->stage2 virtual", "drift stage1->stage2 Δcos"


def hierarchical_drift(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(6, "Hierarchical tokens drift less in Stage 2 than flat ones; their mutual cosine barely changes",
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
        log = {k: (math.log(v) if (v := est[tun].get(k)) and v > 0 else None) for k in ("value", "lo", "hi")}
        verdicts.append(verdict(log))
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
                 "rule": DRIFT_RULE}
    return seed_gate(f, {r: len(g.sources(r, COL)) for r in g.rows() if g.sources(r, COL)}, s.min_seeds)
