"""Render and write the reproduction report from a study's results (nothing else is read: the
numbers, the setup and the wall time all come from the files under the study's root)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from toolsense.comparison.compare import comparison_table
from toolsense.comparison.seed_stats import INTERVAL_METHOD
from toolsense.comparison.verdicts import EQUIVALENCE_RULE, VERDICT_RULE
from toolsense.conduct.timings import killed_spans, study_wall_time, untimed_invocations, wall_text
from toolsense.curves.points import CURVES
from toolsense.evaluation.outputs import write_json
from toolsense.paper.full_catalog import full_catalog_baselines, full_catalog_section
from toolsense.plan.config import AnalysisPlan
from toolsense.plan.power import power_section
from toolsense.plan.registration import read_registration
from toolsense.reporting.catalog_section import catalog_section
from toolsense.reporting.disclosure import changes_markdown, disclosure_section
from toolsense.reporting.tables import ONE_SEED_MARK, comparison_cell, markdown_table
from toolsense.study.conduct import conduct_section
from toolsense.study.design import regime_text, registration_section
from toolsense.study.findings import FLOOR_RULE, configured, registered
from toolsense.study.findings.common import DEBIASED_COL, ceiling_above_chance
from toolsense.study.inputs import rebuild_inputs
from toolsense.study.plan_report import finding_tables, mark_depends, rule_changes, tables_markdown
from toolsense.study.readings import (
    APPENDIX_E,
    SECOND_READINGS,
    apply_pilots,
    readings_json,
    secondary_findings,
    secondary_markdown,
    study_findings,
    subset_findings,
    subsets_markdown,
)
from toolsense.study.sweep import Finding, Settings, Sweep, scored_samples
from toolsense.utils.io import MissingFile, git_sha
from toolsense.utils.paths import portable_text

SWEEP_ROLES = {"grid": "the configurations × tunings × seeds",
               "appendix_e": "App. E: TG trained on realistic(-style) queries (which: the Stage-2 queries column)",
               "appendix_e_covered": "App. E rerun on a Stage-2 split that covers every tool (finding 7)",
               "retention": "probes after Stage 1 and Stage 2, drift with per-token rows, stages in epochs",
               "architecture": "a second architecture on a subset",
               "probe_model": "the probe rows on a model that can answer the probes (findings 4, 5)",
               "probe_ceiling": "a stronger instruct model, untrained: can the probes be answered at all?"}


def load_sweeps(root: str | Path, k: int, resamples: int, min_hits: int = 10) -> dict[str, Sweep]:
    """Every sweep directory under ``root`` (hidden ones skipped), read into a Sweep."""
    root = Path(root)
    if not root.exists():
        raise MissingFile(f"root: {root} does not exist (run the study first: python reproduce.py)")
    return {p.name: Sweep(p.name, p, k, resamples, min_hits) for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith(".")}


def settings_of(cfg) -> Settings:
    """The findings' settings of a StudyConfig."""
    plan = getattr(cfg, "analysis", None)
    s = Settings(k=cfg.k, resamples=cfg.resamples, margin=cfg.margin, min_hits=cfg.min_hits)
    return configured(s, plan) if plan is not None else s


def retention_section(sweeps: dict[str, Sweep]) -> str:
    """Knowledge retention (Stage-2 minus Stage-1 probe accuracy, paired per item, clustered by item;
    cell_stats.retention) of every sweep that evaluated probes after both stages, beside both stages'
    accuracies and whether the probe's card ceiling after Stage 2 is above chance (where it is not, the
    model cannot answer the probe even from the tool's description: the difference compares guesses);
    or a line saying no sweep did."""
    rows = []
    for name, sw in sweeps.items():
        for col in [c for c in (sw.comp or {}).get("columns", []) if c.startswith("retention ")]:
            probe = col.removeprefix("retention ").removesuffix(" Δacc")
            for row in sw.rows():
                est = sw.cell(row, col)
                if est:
                    bench = probe.split(" ")[0]
                    ceiling = ("yes" if ceiling_above_chance(sw, row, bench) else "no") if bench in DEBIASED_COL else "—"
                    rows.append([name, row, probe, comparison_cell(f"{probe} acc", sw.cell(f"{row}:stage1", f"{probe} acc")),
                                 comparison_cell(f"{probe} acc", sw.cell(row, f"{probe} acc")), comparison_cell(col, est),
                                 str(est.get("n_items", "—")), ceiling])
    if not rows:
        return ("No Stage-1 probe results exist in this study (after Stage 1 the runs were evaluated on retrieval alone: "
                "`evaluate.stage_overrides.stage1` drops the probes), so retention — Stage-2 minus Stage-1 probe accuracy, "
                "paired per item — is not measured. With `evaluate.stages=[stage1,stage2]` and probes at both, this section "
                "shows it per configuration.\n")
    return ("Raw accuracy after each stage of the same run, and its difference paired per item (clustered by item; 95% "
            "interval). *Card ceiling* says whether the probe, asked with the tool's description in the prompt after Stage 2, "
            "is answered above chance; where it is not, a difference between the stages compares guesses, not knowledge.\n\n"
            + markdown_table(["sweep", "configuration", "probe", "after Stage 1", "after Stage 2", "Stage 2 − Stage 1 (pp)",
                              "items", "card ceiling above chance"], rows))


def run_config(sweep: Sweep) -> dict[str, Any]:
    """The config.yaml of the sweep's first run (the settings all its runs share)."""
    for path in sorted(sweep.path.glob("*/config.yaml")):
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {}


def _n_tools(sweep: Sweep) -> str:
    """Tools in the first run's index (the catalog the sweep trained on)."""
    for path in sorted(sweep.path.glob("*/index.json")):
        return str(len(json.loads(path.read_text(encoding="utf-8")).get("tools", [])))
    return "—"


def expected_runs(overrides: list[str]) -> int:
    """Jobs of a train.py -m sweep: the product of its comma lists (values in [...] or {...} are one value)."""
    n = 1
    for o in overrides:
        value = o.partition("=")[2]
        if value and value[0] not in "[{'\"":
            n *= len(value.split(","))
    return n


def _setup(cfg, sweeps: dict[str, Sweep], wall: dict[str, float], untimed: dict[str, dict[str, int]] | None = None) -> str:
    """One row per sweep of the study (run or not): runs found of those planned, and the settings
    its runs share, read from their config.yaml."""
    rows = []
    for name in [*cfg.sweeps, *cfg.evaluations, *(n for n in sweeps if n not in cfg.sweeps and n not in cfg.evaluations)]:
        sw = sweeps.get(name)
        planned = expected_runs(cfg.sweeps[name]) if name in cfg.sweeps else None
        found = len(list(sw.path.glob("*/eval/results.json"))) if sw else 0
        runs = f"{found} of {planned}" if planned else ("evaluation" if sw and sw.comp else "not run yet")
        c = run_config(sw) if sw else {}
        s1, s2, tr, tu = c.get("stage1", {}), c.get("stage2", {}), c.get("trainer", {}), c.get("tuning", {})
        model = c.get("model", {}).get("name_or_path") or next(
            (o.partition("=")[2] for o in (cfg.sweeps.get(name) or cfg.evaluations.get(name) or []) if o.startswith("model=")), "—")
        rows.append([name, SWEEP_ROLES.get(name, ""), runs, str(model), _n_tools(sw) if sw else "—",
                     f"{_stage_size(sw, 'stage1', s1)} / {_stage_size(sw, 'stage2', s2)} × {tr.get('effective_batch')}" if c else "—",
                     f"{tu.get('method')}, embedding rows {tu.get('embedding_rows')}, ×{tu.get('embedding_lr_scale')} lr" if c else "—",
                     _stage2_styles(c), _fmt_wall(wall.get(name), (untimed or {}).get(name, {}))])
    return markdown_table(["sweep", "what", "runs", "model", "tools", "steps S1 / S2 × batch (ep: sized in epochs)", "tuning (first run)",
                           "Stage-2 queries", "wall time"], rows)


def _stage_size(sweep: Sweep, stage: str, stage_cfg: dict[str, Any]) -> str:
    """A stage's size as configured: its steps, or ``1 ep (8–24)`` when sized in epochs (the steps
    each run took, from the ``summary`` row of its metrics.jsonl: they follow from each run's data)."""
    if (stage_cfg.get("max_steps") or -1) > 0:
        return str(stage_cfg["max_steps"])
    steps = sorted({s for p in sweep.path.glob("*/metrics.jsonl") if (s := _global_step(p, stage)) is not None})
    took = f" ({steps[0]}–{steps[-1]})" if len(steps) > 1 else f" ({steps[0]})" if steps else ""
    return f"{stage_cfg.get('epochs')} ep{took}"


def _global_step(metrics: Path, stage: str) -> int | None:
    """The steps ``stage`` took in a run, from the summary row train.py appends to metrics.jsonl."""
    for line in reversed(metrics.read_text(encoding="utf-8").splitlines()):
        if '"summary"' in line:
            return ((json.loads(line).get("summary") or {}).get(stage) or {}).get("global_step")
    return None


def _stage2_styles(run_cfg: dict[str, Any]) -> str:
    """The Stage-2 query sources of a run config, e.g. ``demo/train (verbose)`` or ``demo/train (both styles)``."""
    srcs = (run_cfg.get("stage2") or {}).get("sources") or []
    return "; ".join(f"{s.get('kind')}/{s.get('split')}{' ' + s['path'] if s.get('path') else ''}"
                     + (f" ({s.get('style') or 'both styles'})" if s.get("kind") == "demo" else "")
                     for s in srcs) or "—"


REPORT_COLUMNS = ("standard Rc@{k}", "realistic Rc@{k}", "standard IS@{k}", "realistic IS@{k}", "mcq token acc", "mcq token circ",
                  "mcq token bal", "mcq card acc", "mcq card bal", "qa token acc", "qa token calib", "qa card acc", "qa card calib",
                  "drift stage1->stage2 virtual", "drift stage1->stage2 Δcos")
"""The columns of the report's per-sweep table (the sweep's comparison.md has every column)."""


def compact_table(comp: dict[str, Any], k: int) -> str:
    cols = [c.format(k=k) for c in REPORT_COLUMNS]
    return comparison_table({**comp, "columns": [c for c in cols if c in comp["columns"]], "statistics": {}})


def _fmt_min(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 60:.0f} min"


def _fmt_wall(seconds: float | None, untimed: dict[str, int]) -> str:
    """A sweep's wall time, saying which invocations it misses or only bounds (``≥``) or took from logs."""
    text = ("≥ " if (untimed.get("missing") or untimed.get("to_files")) and seconds else "") + _fmt_min(seconds)
    notes = [f"{n} interrupted invocation{'s' * (n > 1)} timed from {'their' if n > 1 else 'its'} log"
             for n in [untimed.get("from_log", 0)] if n]
    notes += [f"{n} killed invocation{'s' * (n > 1)} counted to the last file {'they' if n > 1 else 'it'} left"
              for n in [untimed.get("to_files", 0)] if n]
    notes += [f"{n} invocation{'s' * (n > 1)} that did not end, not counted" for n in [untimed.get("missing", 0)] if n]
    return text + (f" ({'; '.join(notes)})" if notes else "")


def _findings_table(main: list[Finding], seconds: dict[str, list[Finding]]) -> str:
    """The grid's findings, then a column pair per other reading (header: its sweep and model)."""
    header = ["#", "finding", "paper", "ours (95% CI)", "holds?", "rests on"]
    for name in seconds:
        header += [name, "holds?"]
    rows = []
    for i, f in enumerate(main):
        row = [str(f.number), f.claim, f.paper, f.ours, headline(f), f.rests_on or "—"]
        for other in seconds.values():
            s = other[i]
            row += [s.ours if s.verdict != "n/a" else f"n/a ({s.why})", f"**{s.verdict}**"]
        rows.append(row)
    return markdown_table(header, rows)


def headline(f: Finding) -> str:
    """A finding's verdict cell: the verdict, "depends on k / the scale" where its sensitivity table flips,
    and a rule changed after results existed with the verdict under the registered rule."""
    floor = f.details.get("floor_rule")
    out = f"**{f.verdict}: {', '.join(floor['below'])} {'does' if len(floor['below']) == 1 else 'do'} not retrieve**" if floor \
        else f"**{f.verdict}**"
    if floor:
        out += f"; without the floor rule (added after the data): {floor['verdict_without']}"
    rv = f.details.get("rule_verdict")
    if rv and not floor and rv["verdict"] != f.details.get("verdict_at_these_seeds", f.verdict):
        out += f"; under the plan's rule ({rv['rule']}, intervals over items): {rv['verdict']}"
    if f.details.get("depends_on"):
        out += f"; depends on {' and on '.join(f.details['depends_on'])}"
    ch = f.details.get("rule_change")
    if ch:
        out += (f"; rule changed after results existed (registered: {ch['registered']} → {ch['verdict_registered']}; "
                f"now: {ch['now']} → {ch['verdict_now']})")
    return out


def _reasons(findings: list[Finding], notes: dict[int, str], seconds: dict[str, list[Finding]] | None = None) -> str:
    """A line per finding where the grid, or another reading, disagrees: the verdicts, the computed why, then the person's note."""
    lines = []
    for i, f in enumerate(findings):
        others = [(name, fs[i].verdict) for name, fs in (seconds or {}).items() if fs[i].verdict not in ("yes", "n/a")]
        if f.verdict == "yes" and not others:
            continue
        verdicts = "; ".join([f.verdict, *(f"{name}: {v}" for name, v in others)])
        note, why = notes.get(f.number), f.why.rstrip(".")
        head = f"{why[:1].upper()}{why[1:]}." if why else ""
        lines.append(f"- **{f.number}. {verdicts}.** " + " ".join(x for x in (head, note) if x) if head or note
                     else f"- **{f.number}. {verdicts}.** no reason recorded")
    return "\n".join(lines) or "- Every finding's direction holds."


def _plots(sweeps: dict[str, Sweep], plots_dir: Path, report: Path) -> list[str]:
    from toolsense.comparison.plots import render_all

    lines = []
    for name, sw in sweeps.items():
        if not sw.comp:
            continue
        for path in render_all(sw.comp, plots_dir, prefix=f"{name}_"):
            lines.append(f"![{name}: {path.stem}]({os.path.relpath(path, report.parent)})")
    return lines


def render(cfg, sweeps: dict[str, Sweep], main: list[Finding], seconds: dict[str, list[Finding]], wall: dict[str, float],
           untimed: dict[str, dict[str, int]] | None = None, reading: dict[str, Any] | None = None, rebuilt: str | None = None) -> str:
    """The report's Markdown (seconds: sweep -> its findings read as a grid; reading: :func:`plan_reading`, computed
    when not given; rebuilt: what study/inputs.py rebuilt for the first sweep, said in the catalog section)."""
    reading = reading or plan_reading(cfg, sweeps, main, settings_of(cfg))
    report = Path(cfg.report)
    labelled = {f"{name}: {run_config(sweeps[name]).get('model', {}).get('name_or_path')}": f for name, f in seconds.items()}
    parts = [
        f"# Reproducing the ToolSense findings — study `{cfg.name}`\n",
        f"Made by `{cfg.command}`{'' if cfg.command.startswith('python reproduce.py') else f' (`python reproduce.py study={cfg.name}`)'}"
        f", git `{(git_sha() or 'unknown')[:10]}`, "
        f"{time.strftime('%Y-%m-%d')}. Wall time summed over the sweeps (some ran side by side): {wall_text(sum(wall.values()), untimed)}. "
        f"Rebuild this file from the results alone: `python reproduce.py study={cfg.name} train=false`.\n",
        f"Verdicts (the sign rule): {VERDICT_RULE}; the equivalence rule, {EQUIVALENCE_RULE}, margin **{100 * cfg.margin:.0f} pp** "
        "(`margin`); **untestable** — the data "
        "cannot answer (a probe whose card ceiling — the tool's description in the prompt — is itself at chance, an IS on fewer "
        f"than {cfg.min_hits} constrained hits (`min_hits`; shown ⚑), drift without per-token rows), with the reason; **n/a** — "
        "the sweep lacks the configurations compared. "
        + "".join(spec.note for spec in registered()) +
        f"Recall and IS are at k = {cfg.k}. Intervals treat training seeds and items (queries, probe items) as the two sampled "
        "levels — seeds within a configuration, items shared by every seed: value ± t·se (comparison/seed_stats.py); a cell or "
        f"estimate shows `n=<seeds> sd <between-seed SD>`, and one over a single seed is over items alone ({cfg.resamples} "
        f"resamples) and marked {ONE_SEED_MARK}; differences are paired per item, and per seed where both arms hold the same "
        "seeds; a flat index's IS interval holds at least the Wilson interval of that proportion. No verdict rests on an arm "
        f"of fewer than {settings_of(cfg).min_seeds} seeds (`min_seeds`): such a finding says **not enough seeds**, its "
        "numbers still shown.\n",
        "How each finding is judged (sign rule and equivalence rule as above):\n",
        "\n".join(f"- **{spec.number}.** {spec.rule}" for spec in registered())
        + f"\n- **Every finding that compares arms** ({', '.join(str(s.number) for s in registered() if s.compares)}): "
          f"{FLOOR_RULE}; a finding that pools configurations leaves out one below the floor instead (its rule says so).\n",
        *(["## Regime pilot: curves and the setting the rules choose\n", regime_text(cfg, report)]
          if getattr(getattr(cfg, "analysis", None), "regime", None) else []),
        "## Analysis plan (registered before the data)\n", registration_section(cfg.root),
        power_section(reading["plan"], {f.number: f.details.get("seeds") or {} for f in main}),
        changes_markdown(reading["changes"]),
        "## Changes after the first result, and the intervals as implemented\n",
        disclosure_section([asdict(c) if not isinstance(c, dict) else c for c in getattr(cfg, "post_data_changes", [])],
                           getattr(reading["plan"], "interval", None), INTERVAL_METHOD),
        "## Catalog and standard queries\n", _catalog_text(cfg, sweeps, rebuilt),
        "\n## Baselines over the full 46,984-tool catalog\n", full_catalog_text(cfg, sweeps),
        "## How the runs ran\n", conduct_section(cfg, sweeps, (read_registration(cfg.root) or {}).get("commit")),
        "## Findings\n", _findings_table(main, labelled),
        *(["\n## Secondary endpoints (no verdict of the study rests on them)\n",
           secondary_markdown(main, reading["secondary"], reading["plan"].secondary)] if reading.get("secondary") else []),
        *([f"\n## Every finding at {' and at '.join(str(n) for n in reading['subsets'])} seeds per arm\n",
           subsets_markdown(main, reading["subsets"])] if reading.get("subsets") else []),
        "\n## How each verdict moves with k and with the scale\n", tables_markdown(reading["tables"], reading["plan"]),
        "\n## Where ours disagrees, and the likeliest reason\n", _reasons(main, dict(cfg.notes), seconds),
        "\n## Knowledge retention (Stage 2 − Stage 1 probes)\n", retention_section(sweeps),
        "\n## What ran\n", _setup(cfg, sweeps, wall, untimed),
    ]
    for name, sw in sweeps.items():
        if sw.comp:
            parts += [f"\n## Table: {name} ({SWEEP_ROLES.get(name, name)})\n", compact_table(sw.comp, cfg.k),
                      "\nEvery column (control mode, circular-all, retention, Stage-1 drift): "
                      f"`{Path(cfg.root) / name / 'comparison.md'}`.\n"]
    plots = _plots(sweeps, Path(cfg.plots_dir), report)
    if plots:
        parts += ["\n## Plots\n", "\n".join(plots)]
    return "\n".join(parts) + "\n"


def _catalog_text(cfg, sweeps: dict[str, Sweep], rebuilt: str | None = None) -> str:
    """The catalog's composition and the naming rates of the standard queries the grid scored."""
    run_cfg = run_config(sweeps[next(iter(sweeps))]) if sweeps else {}
    return (f"{rebuilt}\n\n" if rebuilt else "") + catalog_section(run_cfg, scored_samples(sweeps.get("grid"), "standard", cfg.k))


def full_catalog_text(cfg, sweeps: dict[str, Sweep]) -> str:
    """The grid's BM25 and dense over the full catalog beside the study catalog's (``cfg.full_catalog``)."""
    g = sweeps.get("grid")
    if not getattr(cfg, "full_catalog", False) or not g or not g.comp:
        return "Not computed for this study (`full_catalog=false`).\n"
    rows = {name: full_catalog_baselines(g, cfg.k, cfg.root, cfg.resamples, baseline=b)
            for name, b in (("BM25", "bm25"), ("Dense (MiniLM)", "dense"))}
    return full_catalog_section(rows, cfg.k)


def plan_reading(cfg, sweeps: dict[str, Sweep], found: list[Finding], settings: Settings) -> dict[str, Any]:
    """The sensitivity tables under the current plan, the findings they mark "depends on", and the
    rules changed after results existed with both verdicts (plan_report.py); marks ``found``."""
    plan = getattr(cfg, "analysis", None) or AnalysisPlan()
    grid = sweeps.get("grid")
    app_e = next((sweeps[n] for n in APPENDIX_E if n in sweeps and sweeps[n].rows()), None)
    tables = finding_tables(plan, grid, app_e, cfg.k, cfg.resamples)
    mark_depends(found, tables, plan)
    view = {"grid": grid, **({"appendix_e": app_e} if app_e else {})} if grid else {}
    changes = rule_changes(read_registration(cfg.root), plan, view, settings, tables) if grid else {}
    for f in found:
        if f.number in changes:
            f.details["rule_change"] = changes[f.number]
    return {"tables": tables, "changes": changes, "plan": plan, "secondary": secondary_findings(sweeps, settings, plan),
            "subsets": subset_findings(sweeps, settings, plan)}


def write_report(cfg) -> dict[str, Any]:
    """``cfg.report`` (Markdown) and ``<root>/reproduction.json`` (the findings with their
    details) from the results under ``cfg.root`` (cfg: a StudyConfig); plots into ``cfg.plots_dir``."""
    found = load_sweeps(cfg.root, cfg.k, cfg.resamples, cfg.min_hits)
    order = [*cfg.sweeps, *cfg.evaluations]
    sweeps = {n: found[n] for n in sorted(found, key=lambda n: order.index(n) if n in order else len(order))}
    if not any(s.comp for s in sweeps.values()) and not (Path(cfg.root) / CURVES).is_dir():
        raise MissingFile(f"{cfg.root}: no evaluation results under any sweep (did the study's evaluate.suite run?)")
    for name, sw in sweeps.items():  # the full tables the report points to (an unpacked archive has none)
        if sw.comp:
            (sw.path / "comparison.md").write_text(comparison_table(sw.comp), encoding="utf-8")
    rebuilt = [rebuild_inputs(run_config(sw), sw) for sw in sweeps.values()]  # before anything reads the catalog
    settings = settings_of(cfg)
    main = apply_pilots(study_findings(sweeps, settings, "grid"), {int(k): v for k, v in dict(cfg.pilots).items()})
    seconds = {name: f for name in SECOND_READINGS if (f := study_findings(sweeps, settings, name))}
    reading = plan_reading(cfg, sweeps, main, settings)
    spans = killed_spans(cfg.root)  # one walk of the sweeps' folders for both
    wall, untimed = study_wall_time(cfg.root, spans), untimed_invocations(cfg.root, spans)
    report = Path(cfg.report)
    report.parent.mkdir(parents=True, exist_ok=True)
    text = render(cfg, sweeps, main, seconds, wall, untimed, reading, rebuilt=rebuilt[0] if rebuilt else None)
    report.write_text(portable_text(text), encoding="utf-8")  # no machine paths
    summary = {"root": str(cfg.root), "k": cfg.k, "margin": cfg.margin, "min_hits": cfg.min_hits, "git_sha": git_sha(),
               "wall_seconds": wall, "untimed_invocations": untimed,
               "findings": [asdict(f) for f in main], **{name: [asdict(x) for x in f] for name, f in seconds.items()},
               **readings_json(reading["secondary"], reading["subsets"])}
    write_json(Path(cfg.root) / "reproduction.json", summary)
    return summary
