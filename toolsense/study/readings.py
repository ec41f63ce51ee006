"""Which sweeps each registered finding is read on: the grid's findings (the study's verdicts, :func:`study_findings`),
a subset read as a grid of its own (``SECOND_READINGS``), the measured pilots that make a finding untestable, and the
plan's other readings, none of which a verdict of the study rests on: each **secondary endpoint** (``analysis.secondary``:
the findings judged again, same rules, on the sweeps with benchmark columns substituted, ``Sweep.with_benchmarks``)
and each **seed subset** (``analysis.seed_subsets``: the findings on the first N seeds of each arm, ``Sweep.first_seeds``)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from toolsense.plan.config import AnalysisPlan
from toolsense.reporting.tables import markdown_table
from toolsense.study.findings import judged, registered
from toolsense.study.sweep import Finding, Settings, Sweep

SECOND_READINGS = ("architecture", "probe_model", "retention")
"""Sweeps read as grids of their own, each a column pair of the findings table beside the grid's."""

APPENDIX_E = ("appendix_e_covered", "appendix_e")
"""The App. E sweeps (the ``appendix_e`` role of the findings that read one), the first present: the rerun whose Stage 2 covers every tool,
else the earlier one on the short split alone (95 of 126 tools)."""


def study_findings(sweeps: dict[str, Sweep], settings: Settings, sweep: str = "grid") -> list[Finding]:
    """Every registered finding on ``sweep`` (the grid, or a subset read as a grid of its own: the second
    architecture, the probe model), each given the sweeps by role; App. E is compared with the grid only,
    an earlier App. E sweep (role ``appendix_e_earlier``) said beside the rerun's."""
    if sweep not in sweeps:
        return []
    app_e = next((n for n in APPENDIX_E if sweep == "grid" and n in sweeps and sweeps[n].rows()), None)
    earlier = next((n for n in APPENDIX_E[1:] if app_e and n != app_e and n in sweeps and sweeps[n].rows()), None)
    view = {"grid": sweeps[sweep], **({"appendix_e": sweeps[app_e]} if app_e else {}),
            **({"appendix_e_earlier": sweeps[earlier]} if earlier else {})}
    found = []
    for spec in registered():
        f = judged(spec, view, settings)
        f.rests_on = " + ".join(runs_text(view[role], view[role].name) for role in spec.reads if role in view)
        found.append(f)
    return found


def apply_pilots(found: list[Finding], pilots: dict[int, str]) -> list[Finding]:
    """Each finding the runs left undecided (n/a, untestable) that a measured pilot showed untestable
    at this budget: **untestable**, the pilot quoted first in its reason (StudyConfig.pilots)."""
    for f in found:
        pilot = pilots.get(f.number)
        if pilot and f.verdict in ("n/a", "untestable"):
            f.verdict = "untestable"
            f.why = "; ".join(x for x in (f"untestable at this budget by a measured pilot: {pilot}", f.why) if x)
            f.details["pilot"] = pilot
    return found


def runs_text(sweep: Sweep, name: str) -> str:
    """``grid (16 runs)``: a sweep and the number of its runs whose evaluation finished."""
    n = len(list(sweep.path.glob("*/eval/results.json")))
    return f"`{name}` ({n} run{'s' * (n != 1)})"


def secondary_findings(sweeps: Mapping[str, Sweep], settings: Settings, plan: AnalysisPlan) -> dict[str, list[Finding] | None]:
    """Endpoint -> every finding judged on the sweeps with its benchmark columns substituted (a sweep without the
    substitute left out; the grid without it: None, "not scored")."""
    out: dict[str, list[Finding] | None] = {}
    for name, subst in plan.secondary.items():
        views = {n: v for n, sw in sweeps.items() if (v := sw.with_benchmarks(subst)) is not None}
        out[name] = study_findings(views, settings, "grid") if "grid" in views else None
    return out


def subset_findings(sweeps: Mapping[str, Sweep], settings: Settings, plan: AnalysisPlan) -> dict[int, list[Finding]]:
    """N -> every finding on the first N seeds of each arm (each sweep rebuilt from those runs)."""
    return {n: study_findings({name: sw.first_seeds(n) for name, sw in sweeps.items()}, settings, "grid")
            for n in plan.seed_subsets if "grid" in sweeps}


def _seeds(f: Finding) -> str:
    seeds = f.details.get("seeds") or {}
    return f" ({', '.join(f'{a} {m}' for a, m in seeds.items())} seeds)" if seeds else ""


def secondary_markdown(main: Sequence[Finding], secondary: Mapping[str, list[Finding] | None],
                       subst: Mapping[str, Mapping[str, str]]) -> str:
    """The secondary endpoints' table: beside each primary verdict, each endpoint's estimate, interval and verdict."""
    rows = []
    for i, f in enumerate(main):
        for name, found in secondary.items():
            what = ", ".join(f"{b} for {a}" for a, b in subst[name].items())
            s = found[i] if found else None
            rows.append([str(f.number), f"**{f.verdict}**", f"`{name}` ({what})",
                         "not scored: the runs have no such benchmark" if s is None else s.ours if s.verdict != "n/a"
                         else f"n/a ({s.why})", "not scored" if s is None else f"**{s.verdict}**"])
    return ("Secondary endpoints: each finding judged again under its own registered rule (metric, k, scale, margin, arms, "
            "floor, minimum seeds) with the primary benchmark's columns read from the substitute. They are secondary: no "
            "verdict of the study rests on them.\n\n" + markdown_table(
                ["#", "primary verdict", "endpoint (benchmark read in place of the primary's)", "ours (95% CI)", "verdict"],
                rows) + "\n")


def subsets_markdown(main: Sequence[Finding], subsets: Mapping[int, list[Finding]]) -> str:
    """Each finding's verdict on all seeds and on the first N seeds of each arm (its lowest seed numbers)."""
    rows = [[str(f.number), f.claim, f"**{f.verdict}**{_seeds(f)}",
             *(f"**{found[i].verdict}**{_seeds(found[i])}" for found in subsets.values())] for i, f in enumerate(main)]
    return ("Each finding under its registered rule on all seeds and on the first N seeds of each arm (the lowest seed "
            "numbers; every sweep rebuilt from those runs). The headline verdict is the one on all seeds.\n\n"
            + markdown_table(["#", "finding", "all seeds", *(f"first {n} seeds" for n in subsets)], rows) + "\n")


def readings_json(secondary: Mapping[str, list[Finding] | None], subsets: Mapping[int, list[Finding]]) -> dict[str, Any]:
    """The other readings for reproduction.json (``asdict`` of each finding; None: not scored)."""
    from dataclasses import asdict

    return {"secondary": {n: [asdict(f) for f in found] if found else None for n, found in secondary.items()},
            "seed_subsets": {str(n): [asdict(f) for f in found] for n, found in subsets.items()}}
