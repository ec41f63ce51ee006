"""The report's design sections: the registered analysis plan (and any rule changed after results
existed); the plan's power calculation is plan/power.py, the catalog's composition reporting/catalog_section.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolsense.curves.config import RegimeRule
from toolsense.curves.regime import regime_section
from toolsense.plan.registration import changed_rules, read_registration
from toolsense.reporting.tables import markdown_table


def registration_section(root: str | Path) -> str:
    """The plan as registered (hash, commit, time, runs that existed), each rule, and every change made after results."""
    reg = read_registration(root)
    if reg is None:
        return "No analysis plan was registered for this study (it ran before registration existed, 2026-12-03).\n"
    plan = reg["plan"]
    lines = [f"Registered {reg['at']} at commit `{str(reg['commit'])[:10]}`"
             f"{_uncommitted(reg)}, "
             f"plan sha256 `{reg['sha256'][:12]}`, with {reg['finished_runs_before']} finished run(s) already present. "
             f"Minimum seeds per arm {plan['min_seeds']}; a configuration below constrained Rc@k {100 * plan['retrieval_floor']:.0f}% "
             f"does not retrieve (reported, not averaged in); sensitivity over k ∈ {plan['sensitivity_ks']} and scales "
             f"{', '.join(plan['sensitivity_scales'])}; intervals: {plan['interval']}.\n"]
    rows = [[n, r["metric"], r["k"], r["scale"], f"{100 * r['margin']:.0f}", ", ".join(r["arms"]) or "default"]
            for n, r in sorted(plan["findings"].items(), key=lambda x: int(x[0]))]
    if rows:
        lines.append(markdown_table(["finding", "metric", "k", "scale", "margin (pp)", "arms"], rows))
    late = changed_rules(reg)
    for ch in late:
        lines.append(f"\n**Rule changed after results existed** ({ch['at']}, {ch['finished_runs_before']} finished runs): "
                     f"{', '.join(ch['moved'])}. Verdicts are shown under both plans where they differ.")
    early = len(reg.get("changes", [])) - len(late)
    if early:
        lines.append(f"\n{early} change(s) made before any result existed (not flagged).")
    return "\n".join(lines) + "\n"


def _uncommitted(reg: dict[str, Any]) -> str:
    if not reg.get("uncommitted_changes"):
        return ""
    digest = reg.get("diff_sha256")
    return f" (with uncommitted changes{f', diff `{digest[:12]}` kept in the archive' if digest else ''})"


def regime_text(cfg: Any, report: Path) -> str:
    """A pilot's section (curves/regime.py) under its rules as registered (else as configured, said so)."""
    plan_rule = ((read_registration(cfg.root) or {}).get("plan") or {}).get("regime")
    rule = RegimeRule(**plan_rule) if plan_rule else cfg.analysis.regime
    return regime_section(cfg.root, rule, plan_rule is not None, Path(cfg.plots_dir), report)

