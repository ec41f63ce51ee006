"""The report's reading of the registered analysis plan: each registered finding's sensitivity table
under a plan (its ``table``, where it has one), the "depends on k / the scale" in a finding's headline,
and every rule changed after results existed with the verdict under both rules.

Which plan binds (the rule, documented in docs/reports/study.md): registration.json keeps the first plan and
every later change, each with the number of finished runs present when it was recorded. The
*binding* plan is the last one recorded while no run had finished — the plan in force when the first
result came in (where even the first registration found results, that one, and the report says it
was registered late). The report compares the current plan (``StudyConfig.analysis``) with it; a
finding whose rule differs — its own rule, or ``min_seeds`` / ``retrieval_floor``, which move every
verdict — was changed after results existed, since no plan after the binding one was recorded
without results and a plan never recorded at all is being applied to results now. The recorded run
counts decide, not file times (an unpacked archive's times say when it was unpacked). Such a finding
shows its verdict under the binding rule and under the current one.
"""

from __future__ import annotations

from typing import Any, Mapping

from toolsense.comparison.scales import RATE_SCALES
from toolsense.curves.config import RegimeRule
from toolsense.plan.config import AnalysisPlan, FindingRule, PowerRule
from toolsense.plan.registration import plan_dict
from toolsense.reporting.sensitivity_table import sensitivity_markdown
from toolsense.study.findings import TableInput, configured, finding, judged, registered
from toolsense.study.sweep import Finding, Settings, Sweep

VERDICT_KEYS = ("min_seeds", "retrieval_floor")
"""Plan-level keys that move every finding's verdict (the others move only the tables)."""


def as_plan(plan: AnalysisPlan | Mapping[str, Any]) -> AnalysisPlan:
    """A plan as registration.json stores it (finding numbers as strings) back to the dataclass."""
    if isinstance(plan, AnalysisPlan):
        return plan
    d = dict(plan)
    rules = {int(n): FindingRule(**{**r, "power": PowerRule(**r["power"]) if r.get("power") else None})
             for n, r in (d.pop("findings", None) or {}).items()}
    d["power"] = PowerRule(**d["power"]) if d.get("power") else None
    d["regime"] = RegimeRule(**d["regime"]) if d.get("regime") else None
    return AnalysisPlan(**{k: v for k, v in d.items() if k in AnalysisPlan.__dataclass_fields__}, findings=rules)


def finding_tables(plan: AnalysisPlan, grid: Sweep | None, app_e: Sweep | None, k_table: int,
                   resamples: int) -> dict[int, dict[str, Any]]:
    """Finding -> its sensitivity table under ``plan`` (each registered finding's ``table``): every k of
    ``sensitivity_ks`` and each rule's own k, every scale of ``sensitivity_scales`` and each rule's own."""
    if grid is None or not grid.rows():
        return {}
    rules = plan.findings.values()
    ks = list(dict.fromkeys([*plan.sensitivity_ks, *(r.k for r in rules)]))
    scales = list(dict.fromkeys([*plan.sensitivity_scales, *(r.scale for r in rules if r.scale in RATE_SCALES)]))
    given = TableInput(plan, grid, app_e, ks, scales, k_table, resamples)
    out = {spec.number: spec.table(given) for spec in registered() if spec.table is not None}
    return {n: t for n, t in out.items() if t and t["cells"]}


def tables_markdown(tables: Mapping[int, dict[str, Any]], plan: AnalysisPlan | None = None) -> str:
    """Every table, in finding order, each under its own heading."""
    if not tables:
        return ("No finding has the evaluations its sensitivity table needs (Stage-1 and Stage-2 Rc of the grid's "
                "runs).\n")
    parts = ["Intervals here treat seeds and items as the two sampled levels, as each finding's headline does (its own "
             "k and scale is the headline's cell): a map of where each verdict moves, not a new verdict. "
             "Scales: pp; normalized (the difference over the room in the expected direction); "
             "log-odds; "
             "drift as flat / hierarchical of the absolute and of the base-normalized drift.\n"]
    for n, t in sorted(tables.items()):
        parts += [f"\n### Finding {n}\n", sensitivity_markdown(t)]
    return "\n".join(parts)


def mark_depends(found: list[Finding], tables: Mapping[int, dict[str, Any]], plan: AnalysisPlan | None = None) -> None:
    """``details["depends_on"]`` of each finding whose table's verdict flips, and ``details["rule_verdict"]``:
    its table's cell at the plan's rule (k, scale), where the plan has one (the headline shows both)."""
    for f in found:
        t = tables.get(f.number)
        if t and t["depends_on"]:
            f.details["depends_on"] = list(t["depends_on"])
        rule = (plan.findings if plan else {}).get(f.number)
        key = finding(f.number).rule_cell(rule) if rule else None
        if t and key in t["cells"]:
            f.details["rule_verdict"] = {"rule": rule_text(plan, f.number).partition(";")[0],
                                         "verdict": t["cells"][key]["verdict"]}


def binding_plan(reg: Mapping[str, Any]) -> dict[str, Any]:
    """The registration entry whose plan binds (module doc): ``{plan, at, finished_runs_before, late}``."""
    entries = [reg, *reg.get("changes", [])]
    clean = [e for e in entries if not e.get("finished_runs_before")]
    e = clean[-1] if clean else reg
    return {"plan": e.get("plan", reg["plan"]), "at": e["at"], "finished_runs_before": e.get("finished_runs_before", 0),
            "late": not clean}


def changed_findings(binding: Mapping[str, Any], current: Mapping[str, Any]) -> dict[int, list[str]]:
    """Finding -> the keys of its rule (or of the plan) that differ between the binding and current plans."""
    shared = [k for k in VERDICT_KEYS if binding.get(k) != current.get(k)]
    rb, rc = binding.get("findings") or {}, current.get("findings") or {}
    out: dict[int, list[str]] = {}
    for n in (spec.number for spec in registered()):
        a, b = rb.get(str(n)) or {}, rc.get(str(n)) or {}
        own = [f"findings.{n}.{k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        if own or shared:
            out[n] = own + shared
    return out


def rule_text(plan: AnalysisPlan, n: int) -> str:
    r = plan.findings.get(n)
    what = f"{r.metric} {r.scale}" if r and r.metric == "drift" else f"{r.metric}@{r.k} {r.scale}" if r else ""
    own = (f"{what}, margin {100 * r.margin:.0f} pp" + (f", arms {', '.join(r.arms)}" if r.arms else "")
           if r else "no registered rule")
    return f"{own}; min_seeds {plan.min_seeds}, floor {100 * plan.retrieval_floor:.0f}%"


def verdict_under(n: int, plan: AnalysisPlan, tables: Mapping[int, dict[str, Any]], view: dict[str, Sweep],
                  settings: Settings) -> str:
    """Finding ``n``'s verdict under ``plan``: its table's cell at the rule's (k, scale) where it has one,
    gated by the plan's ``min_seeds``; else the finding recomputed with the plan's settings."""
    rule, t, spec = plan.findings.get(n), tables.get(n), finding(n)
    f = judged(spec, view, configured(settings, plan))
    key = spec.rule_cell(rule) if rule else None
    if t is None or key not in t["cells"] or "floor_rule" in f.details:
        return f.verdict
    short = sorted(a for a, m in (f.details.get("seeds") or {}).items() if m < plan.min_seeds)
    cell = t["cells"][key]["verdict"]
    return f"not enough seeds ({', '.join(short)}; at these seeds {cell})" if short and cell not in ("n/a",) else cell


def rule_changes(reg: Mapping[str, Any] | None, current: AnalysisPlan, view: dict[str, Sweep], settings: Settings,
                 now_tables: Mapping[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Finding -> {moved, registered / now rule text and verdict} for each rule changed after results existed."""
    if not reg:
        return {}
    binding = binding_plan(reg)
    changed = changed_findings(binding["plan"], plan_dict(current))
    if not changed:
        return {}
    old = as_plan(binding["plan"])
    old_tables = finding_tables(old, view.get("grid"), view.get("appendix_e"), settings.k, settings.resamples)
    return {n: {"moved": moved, "registered": rule_text(old, n), "now": rule_text(current, n),
                "binding_at": binding["at"],
                "verdict_registered": verdict_under(n, old, old_tables, view, settings),
                "verdict_now": verdict_under(n, current, now_tables, view, settings)} for n, moved in changed.items()}
