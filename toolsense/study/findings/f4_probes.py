"""Finding 4: factual probes from the virtual token stay near chance after retrieval training. The
equivalence rule on each TG run's token score per benchmark (MCQ, QA), judged on the debiased score
where the run has one, and only where that benchmark's card ceiling is above chance."""

from __future__ import annotations

from toolsense.comparison.verdicts import combine, near_chance
from toolsense.reporting.tables import pct
from toolsense.study.findings.base import FindingSpec, register
from toolsense.study.findings.common import ceiling_above_chance, probe_cells
from toolsense.study.sweep import Finding, Settings, Sweep, seed_gate

NUMBER = 4
RULE = ("equivalence rule (`margin`) on each TG run's token score, per benchmark (MCQ, QA) and only where that "
              "benchmark's card ceiling is above chance (else untestable); the debiased score where the run has one; "
              "near the run's options-only score (probe mode `options`: the question and options, no tool named) where it "
              "has one, else near chance")


NOTE = ("Findings 4 and 5 are judged on the debiased token score (MCQ position-balanced, QA calibrated) where a run has one, "
        "the raw accuracy shown beside it: a model that gives one answer to most items scores the share of gold answers in "
        "that slot, above or below chance by the label mix alone. ")
"""The report header's sentence on how the probe findings are judged."""


def probes_near_chance(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(NUMBER, "Factual probes from the virtual token stay near chance after retrieval training",
                "TG: MCQ 31.4%, QA 50.0%")
    g = sw.get("grid")
    rows = g.rows(experiment="tg") if g else []
    if not rows or not g.cell(rows[0], "mcq token acc"):
        f.why = "no TG probe results"
        return f
    parts, per_bench, details = [], {}, []
    for bench in ("mcq", "qa"):
        verdicts = []
        for row in rows:
            tok, card = probe_cells(g, row, bench, "token"), probe_cells(g, row, bench, "card")
            if not tok["acc"]:
                continue
            judged = tok["debiased"] if tok["debiased"] and tok["debiased"].get("lo") is not None else tok["acc"]
            ceiling = ceiling_above_chance(g, row, bench)
            opt = probe_cells(g, row, bench, "options")  # the floor: the question and options alone, no tool named
            floor = (opt["debiased"] if judged is tok["debiased"] else opt["acc"]) or {}
            base = floor.get("value") if floor.get("value") is not None else tok["acc"]["chance"]
            v = near_chance(judged, base, s.margin) if ceiling else "untestable"
            verdicts.append(v)
            details.append({"row": row, "bench": bench, "verdict": v, "ceiling_above_chance": ceiling, "baseline": base,
                            "against": "options only" if floor.get("value") is not None else "chance",
                            "judged_on": "debiased" if judged is tok["debiased"] else "raw"})
            deb = ("balanced" if g.cell(row, "mcq token bal") else "circular") if bench == "mcq" else "calibrated"
            parts.append(f"{row} {bench.upper()} {pct(tok['acc'])} (chance {100 * tok['acc']['chance']:.0f}, {deb} "
                         f"{pct(tok['debiased'])}; options only {pct(opt['acc'])}, debiased {pct(opt['debiased'])}; card "
                         f"ceiling {pct(card['acc'])}, debiased {pct(card['debiased'])}): {v}")
        per_bench[bench] = combine(verdicts) if verdicts else "n/a"
    f.ours = "; ".join(parts)
    f.verdict = combine(list(per_bench.values()))
    blind = [b.upper() for b, v in per_bench.items() if v == "untestable"]
    if blind:
        f.why = (f"{' and '.join(blind)}: the card ceiling is at chance too — with the tool's description in the prompt the "
                 "model still cannot answer, so a near-chance token score there is no evidence")
    f.details = {"per_benchmark": per_bench, "per_row": details, "margin": s.margin,
                 "judged_on": [d["judged_on"] for d in details], "ceiling_above_chance": [d["ceiling_above_chance"] for d in details],
                 "rule": RULE}
    return seed_gate(f, {r: (g.cell(r, "mcq token acc") or {}).get("n_seeds") or 1 for r in rows}, s.min_seeds)


register(FindingSpec(NUMBER, RULE, probes_near_chance, note=NOTE))
