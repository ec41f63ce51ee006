"""The report's design sections: the registered analysis plan (and any rule changed after results
existed), the catalog's composition, and how often the standard queries name their answer beside
ToolBench's real ones (a generated benchmark is trusted only once measured against what it imitates)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolsense.catalog import load_catalog, load_query_jsonl
from toolsense.catalog.builders import coverage_path
from toolsense.curves.config import RegimeRule
from toolsense.curves.regime import regime_section
from toolsense.data.naming import TOOLBENCH_G1, naming_shares
from toolsense.data.verbose import default_output
from toolsense.reporting.tables import markdown_table
from toolsense.study.registration import changed_rules, read_registration

ROLE_TEXT = {"probe": "tools of the released MCQ / QA dev probes", "rrb_gold": "gold tools of released RRB dev items",
             "pool_negative": "hard negatives from the RRB items' 14-tool pools",
             "toolbench_gold": "gold tools of real ToolBench G1 / G2 / G3 test queries"}


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


def _naming_rates(catalog_path: Path, queries: list) -> tuple[float, float]:
    by = {t.name: t for t in load_catalog(catalog_path)}
    return naming_shares((q.text, by[t]) for q in queries for t in q.tools if t in by)


def catalog_section(run_cfg: dict[str, Any]) -> str:
    """The catalog's composition (its coverage.json) and the naming rates of its standard test queries."""
    path = Path(str((run_cfg.get("catalog") or {}).get("path") or ""))
    cov_file = coverage_path(path) if path.name else None
    if cov_file is None or not cov_file.is_file():
        return "The catalog's composition is not recorded beside it (build it to see it).\n"
    cov = json.loads(cov_file.read_text(encoding="utf-8"))
    n = cov["n_tools"]
    rows = [[ROLE_TEXT.get(r, r), f"{c:,}", f"{100 * c / n:.1f}%"] for r, c in cov["sources"].items()]
    gold = sum(c for r, c in cov["sources"].items() if r not in ("pool_negative",))
    text = [f"{n:,} tools: {gold:,} are gold or probe tools of a scored item, {n - gold:,} distractors. Baselines on it "
            "are not comparable with the paper's over 46,984 tools (a small catalog of mostly gold tools is easier); "
            "`python -m toolsense.paper` gives them over the full catalog.\n", markdown_table(["role", "tools", "share"], rows)]
    tb = cov.get("toolbench")
    if tb:
        text.append(f"\nReal ToolBench test queries whose gold tools are all in it: {tb['covered']} of {tb['total']} "
                    f"({', '.join(f'{k} {v}' for k, v in tb['covered_by_tier'].items())}).")
    verbose = default_output(path)
    if verbose.is_file():
        test = load_query_jsonl(verbose, split="test")
        api, svc = _naming_rates(path, test)
        text.append(f"\nStandard test queries (data/verbose.py v2, {len(test)}) name the API in {100 * api:.1f}% and the "
                    f"service in {100 * svc:.1f}% of (query, gold) pairs; ToolBench G1's real test queries: "
                    f"{100 * TOOLBENCH_G1.api:.1f}% and {100 * TOOLBENCH_G1.service:.1f}% ({TOOLBENCH_G1.pairs} pairs; "
                    "ours are higher where a description contains the name; generator v3, `stage2=verbose_v3`, "
                    "calibrates the draw so that its queries measure G1's rates). `benchmarks/verbose_vs_toolbench.py` "
                    "sets BM25 on both side by side on one catalog.")
    return "\n".join(text) + "\n"


def regime_text(cfg: Any, report: Path) -> str:
    """A pilot's section (curves/regime.py) under its rules as registered (else as configured, said so)."""
    plan_rule = ((read_registration(cfg.root) or {}).get("plan") or {}).get("regime")
    rule = RegimeRule(**plan_rule) if plan_rule else cfg.analysis.regime
    return regime_section(cfg.root, rule, plan_rule is not None, Path(cfg.plots_dir), report)
