"""Ablation tables: every per-evaluation ``results.json`` under one or more directories (a Hydra
sweep, several run directories) in ONE table — a row per configuration (training run + stage)
or baseline, a column per benchmark × metric — written as Markdown, CSV and JSON, with plots.

    python compare.py roots=[multirun/2026-11-29_10-00-00]

Runs whose ``config.yaml`` differ only in ``trainer.seed`` are one configuration: its cell is the pooled estimate with
a 95% interval over seeds *and* items (seed_stats.seed_mean: seeds drawn within the configuration, items shared by
every seed; IS as the ratio of pooled sums), shown with its number of seeds and their SD (``41.2 [35.0, 47.1] n=3 sd
2.1``). A single run's cell is recomputed from its samples.jsonl over items alone (IS by metrics.is_ci: Wilson for a
flat index) and marked ``†`` (one seed), or is its results.json estimate where it has no samples. An IS on fewer than
``min_hits`` constrained hits is flagged. A row is labelled ``experiment-tuning`` (plus the keys that differ, when
configurations share that). Probe accuracy cells carry chance and the majority rate; with Stage-1 and Stage-2
evaluations of the same runs a retention column group holds their difference (paired per item and per run, over seeds
and items). ``drift.json`` files add drift columns (virtual / base relative drift, their ratio, the change of the
virtual tokens' mean pairwise cosine). Cohen's d of IS between flat and hierarchical configurations (unit: one
configuration on one benchmark, seeds pooled; few-hit IS left out) with its bootstrap interval sits under the table.
Baselines do not depend on the run; each (baseline, benchmark) appears once, and copies that disagree are an error.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from toolsense.comparison.cell_stats import combine_seeds, effect_size, retention, stage2_schemes
from toolsense.comparison.item_sets import item_set, mixed_items, same_evaluation, why_different
from toolsense.comparison.runs import gold_majority_rate, row_key, row_labels, run_info, stage1_rows
from toolsense.comparison.significance import legend, marker, table_significance
from toolsense.comparison.stats import drift_ratio
from toolsense.evaluation.outputs import json_text
from toolsense.metrics.registry import METRICS
from toolsense.reporting.compare_report import render_comparison
from toolsense.reporting.tables import ONE_SEED_LEGEND, SEED_LEGEND, benchmark_label, comparison_cell, flag_text, markdown_table
from toolsense.tracking import LoggerConfig, job_tracker
from toolsense.utils.config import Seed, to_config
from toolsense.utils.errors import ConfigError, MissingFile
from toolsense.utils.io import DataError
from toolsense.utils.progress import progress
from toolsense.utils.publish import load_published_json, publish
from toolsense.utils.rundir import holding

HEADLINE = [METRICS.key(stem, 50) for stem in ("Rc", "Rf", "IS")]
"""The paper's retrieval columns (beam 50); probes always show accuracy, chance and majority rate."""


@dataclass
class CompareConfig:
    """Schema of ``conf/compare.yaml`` (registered as ``compare_schema``): ``python compare.py``."""

    roots: list[str] = field(default_factory=list)
    """Directories searched recursively for results.json (sweep dirs, run dirs, eval dirs)."""
    metrics: list[str] = field(default_factory=lambda: list(HEADLINE))
    """Retrieval metrics (results.json keys of registered metrics, metrics/registry.py), one column each per
    retrieval benchmark (e.g. [Rc@1,Rf@1,IS@1,Rc@10,COMPc@10,Rprec_c]). A
    metric@k that no result holds is replaced by the same metric at the largest k evaluated below k
    (else the smallest above), said on stdout: a beam-10 sweep gets @10 columns, not a table of "—"."""
    resamples: int = 1000
    """Bootstrap resamples of the pooled-seed and retention intervals."""
    seed: Seed = 0
    """Bootstrap seed."""
    effect_metric: str = METRICS.key("IS", 50)
    """Cohen's d between flat and hierarchical configurations is taken over this metric."""
    min_hits: int = 10
    """An IS on fewer constrained hits is flagged and left out of Cohen's d (as evaluate.py's metrics.min_hits)."""
    plots: bool = True
    """Also render PNG plots (plots.py) beside the table."""
    output_dir: Optional[str] = None
    """None = Hydra's (timestamped) output dir; outside Hydra, outputs/compare."""
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    """logger=wandb: the table as a W&B Table (``compare/table``) and the page, tables and plots as one
    ``comparison`` artifact, in a run under ``<output_dir>/wandb`` (offline unless WANDB_MODE says otherwise)."""

    def __post_init__(self) -> None:
        METRICS.check_keys(self.metrics, "compare.metrics")
        METRICS.check_keys([self.effect_metric], "compare.effect_metric")
        if self.resamples < 1:
            raise ValueError(f"resamples must be >= 1, got {self.resamples}")
        if self.min_hits < 1:
            raise ValueError(f"min_hits must be >= 1, got {self.min_hits}")


def collect(roots: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The per-evaluation results under ``roots`` (combined summaries, which hold a
    ``results`` list instead of metrics, are skipped so nothing is counted twice)."""
    found = []
    for root in map(Path, roots):
        if not root.exists():
            raise MissingFile(f"roots: {root} does not exist")
        for path in progress(sorted([*root.rglob("results.json"), *root.rglob("drift.json")]), desc=f"compare {root}", unit="file",
                             min_total=50):
            res = load_published_json(path)  # only what its folder's manifest published (utils/publish.py)
            if path.name == "drift.json":
                res = _drift_result(res, path)
            if not isinstance(res, dict) or "kind" not in res or "metrics" not in res:
                continue
            for key in ("benchmark", "system"):
                if key not in res:
                    raise DataError(f"{path}: field {key!r} is missing")
            res["_path"] = str(path)
            found.append(res)
    return found


def _drift_result(drift: dict[str, Any], path: Path) -> dict[str, Any]:
    """A drift.json (evaluate.py task=drift) as a result row, per checkpoint pair: relative drift
    of the input embeddings' virtual-token rows and base-vocabulary sample, their ratio
    (stats.drift_ratio) and the change of the virtual tokens' mean pairwise cosine (Δcos)."""
    if "pairs" not in drift or "run" not in drift:
        raise DataError(f"{path}: field 'pairs' or 'run' is missing (not a task=drift output?)")
    metrics = {}
    for p in drift["pairs"]:
        inp, pair = p["input"], f"{p['from']}->{p['to']}"
        metrics[f"{pair} virtual"] = {"value": inp["virtual"]}
        metrics[f"{pair} base"] = {"value": inp["base_vocab"]}
        metrics[f"{pair} ratio"] = {"value": drift_ratio(inp["virtual"], inp["base_vocab"])}
        metrics[f"{pair} Δcos"] = {"value": inp.get("cosine_change")}
    return {"benchmark": "drift", "system": "drift", "kind": "drift", "metrics": metrics,
            "source": {"run": drift["run"], "stage": "stage2"}}


PROBE_METRICS = {"accuracy": "acc", "circular_mean": "circ", "circular_all": "circ-all", "balanced_accuracy": "bal",
                 "calibrated_accuracy": "calib"}
"""Probe metrics shown in the table (when the result has them) and their column suffix."""


def _probe_extras(res: dict[str, Any]) -> dict[str, Any]:
    """Chance and majority rate of a probe (read from results.json when it has them, else chance
    1/answers — 25% MCQ, 50% QA — and the gold majority rate from samples.jsonl)."""
    chance = res.get("chance", 0.25 if res["kind"] == "mcq" else 0.5)
    majority = res.get("majority_rate")
    if majority is None:
        majority = gold_majority_rate(res["_path"])
    return {"chance": chance, "majority_rate": majority}


def available_metrics(results: Sequence[dict[str, Any]], metrics: Sequence[str]) -> dict[str, str]:
    """``requested -> used`` for each retrieval metric: itself when some retrieval result holds it,
    else the same metric at the largest k below the requested one that some result holds (else the
    smallest above); a metric no result holds at any k is kept (its column reads "—")."""
    held = {m for r in results if r["kind"] == "retrieval" for m in r["metrics"]}
    out = {}
    for want in metrics:
        parsed = METRICS.parse(want)
        if want in held or parsed is None or parsed[2] is None:
            out[want] = want
            continue
        m, mode, k = parsed
        ks = sorted({p[2] for h in held if (p := METRICS.parse(h)) and p[0] is m and p[1] == mode and p[2] is not None})
        below = [x for x in ks if x <= k]
        out[want] = m.result_key(mode, below[-1] if below else ks[0]) if ks else want
    return out


def result_columns(res: dict[str, Any], metrics: Sequence[str]) -> dict[str, tuple[str | None, dict | None]]:
    """``column -> (metric with per-item samples or None, estimate)`` of one result."""
    if res["kind"] == "retrieval":
        return {f"{benchmark_label(res)} {m}": (m, METRICS.find(res["metrics"], m)) for m in metrics}
    if res["kind"] == "drift":
        return {f"drift {k}": (None, v) for k, v in res["metrics"].items()}
    # a probe: the mode (token / control / card) is part of the column; accuracy carries chance,
    # majority rate and the one-answer flag; circular / calibrated accuracies when evaluated
    flag = flag_text(res.get("top_answer"))
    cols = {}
    for key, short in PROBE_METRICS.items():
        est = res["metrics"].get(key)
        if key == "accuracy":
            cols[f"{benchmark_label(res)} {res['system']} {short}"] = (
                "accuracy", est and {**est, **_probe_extras(res), **({"flag": flag} if flag else {})})
        elif est is not None:
            cols[f"{benchmark_label(res)} {res['system']} {short}"] = (key, est)
    return cols


def tier_columns(res: dict[str, Any], metrics: Sequence[str]) -> dict[str, tuple[tuple[str, str], dict | None]]:
    """``<benchmark> [<tier>] <metric> -> ((metric, tier), estimate as results.json wrote it)`` of a retrieval result with
    several tiers (RRB easy / medium / hard; the demo's 1-tool / 2-tool); several seeds get the main cells' interval over
    the tier's items (cell_stats.combine_seeds' ``tier``); significance and Cohen's d keep to whole benchmarks."""
    tiers = (res.get("tiers") or {}) if res["kind"] == "retrieval" else {}
    if len(tiers) < 2:
        return {}
    return {f"{benchmark_label(res)} [{t}] {m}": ((m, str(t)), METRICS.find(v.get("metrics") or {}, m))
            for t, v in tiers.items() for m in metrics}


def comparison(results: Sequence[dict[str, Any]], metrics: Sequence[str], resamples: int = 1000, seed: int = 0,
               effect_metric: str = METRICS.key("IS", 50), min_hits: int = 10) -> dict[str, Any]:
    """Rows and columns of the ablation table, the estimates per cell and the statistics.
    Columns: retrieval benchmarks × metrics, probe accuracies, retention (when Stage-1 and
    Stage-2 probes of the same runs exist), embedding drift; each in order of first appearance.
    A metric no registration spells (metrics/registry.py) is an error, not an empty column."""
    METRICS.check_keys([*metrics, effect_metric], "comparison metrics")
    keys = [row_key(r) for r in results]
    meta = row_labels(keys)
    entries: dict[tuple[str, str], list[tuple[dict | None, dict]]] = {}
    col_metric: dict[str, str | None] = {}  # per-item values of a column's cells: significance tests them
    col_tier: dict[str, tuple[str, str]] = {}  # a tier column's (metric, tier)
    seen: dict[tuple[str, str, str | None], dict] = {}
    items: dict[str, dict[str, set]] = {}  # column -> row -> the item sets its cells rest on
    order: dict[str, list[str]] = {"retrieval": [], "tiers": [], "probe": [], "drift": []}
    for res, (key, is_baseline, run, stage) in zip(results, keys):
        label = meta[key]["label"]
        tiers = tier_columns(res, metrics)
        col_tier.update((col, mt) for col, (mt, _) in tiers.items())
        for col, (metric, est) in {**result_columns(res, metrics), **{c: (None, e) for c, (_, e) in tiers.items()}}.items():
            group = order["tiers"] if col in tiers else order.get(res["kind"], order["probe"])
            if col not in group:
                group.append(col)
            col_metric[col] = metric
            first = seen.get((label, col, run))
            twin = seen.get((label, col, ("seed", run_info(run).seed))) if run and stage != "stage2" else None
            if twin is not None and twin["metrics"] == res["metrics"] and twin.get("n") == res.get("n") and twin is not first:
                continue  # one Stage 1 shared by arms that differ in Stage 2 only (runs.stage_info): counted once
            if first is not None:
                if is_baseline and same_evaluation(first, res, est == entries[(label, col)][0][0]):
                    continue  # the same baseline evaluated again next to another run
                raise DataError(f"{res['_path']}: a second, different result for {label!r} / {col!r} "
                                f"(first: {first['_path']}{why_different(first, res)}); give roots one evaluation per run")
            seen[(label, col, run)] = res
            if run:
                seen.setdefault((label, col, ("seed", run_info(run).seed)), res)
            entries.setdefault((label, col), []).append((est, res))
            items.setdefault(col, {}).setdefault(label, set()).add(item_set(res))
    cells: dict[str, dict[str, Any]] = {}
    for (label, col), ents in entries.items():
        metric, tier = col_tier.get(col) or (col_metric[col], None)  # a tier column: its pooled seeds' interval, no test
        cells.setdefault(label, {})[col] = combine_seeds(metric, ents, resamples, seed, min_hits, tier=tier)
    rows_meta = {m["label"]: m for m in meta.values()}
    retention_cols = retention(entries, rows_meta, order["probe"], cells, resamples, seed)
    baselines = sorted(lb for lb, m in rows_meta.items() if m["baseline"])
    rows = sorted(lb for lb in cells if lb not in baselines) + baselines
    return {"columns": order["retrieval"] + order["tiers"] + order["probe"] + retention_cols + order["drift"], "rows": rows,
            "cells": cells, "baselines": baselines, "tier_columns": order["tiers"],
            "schemes": {lb: rows_meta[lb]["scheme"] for lb in rows if lb in rows_meta}, "stage1_of": stage1_rows(keys, meta),
            "statistics": {"cohens_d": effect_size(cells, stage2_schemes(rows_meta), order["retrieval"], effect_metric, resamples, seed),
                           "significance": table_significance(entries, col_metric, rows, resamples, seed)},
            "sources": {f"{lb} | {col}": [r["_path"] for _, r in ents] if len(ents) > 1 else ents[0][1]["_path"]
                        for (lb, col), ents in entries.items()},
            "mixed_items": mixed_items(items, cells)}


def comparison_table(comp: dict[str, Any]) -> str:
    header = ["system"] + comp["columns"]
    sig = (comp.get("statistics") or {}).get("significance")
    mixed = comp.get("mixed_items") or {}
    rows = [[label] + [comparison_cell(col, comp["cells"][label].get(col)) + marker(sig, label, col)
                       + (" ≠" if col in mixed and comp["cells"][label].get(col) else "") for col in comp["columns"]]
            for label in comp["rows"]]
    table = markdown_table(header, rows) + legend(sig) + seed_legend(comp)
    for col, by in mixed.items():  # cells side by side on other items: said, not hidden
        table += f"\n≠ {col!r} mixes item sets, its cells are not comparable: " + "; ".join(f"{lb}: {t}" for lb, t in by.items()) + "\n"
    effect = cohens_d_text((comp.get("statistics") or {}).get("cohens_d"))
    return table + (f"\n{effect}\n" if effect else "")


def cohens_d_text(d: Mapping[str, Any] | None) -> str:
    """The Cohen's d line under a comparison table ('' without a d)."""
    if not d or d.get("d") is None:
        return ""
    ci = f" [{d['lo']:.2f}, {d['hi']:.2f}]" if d.get("lo") is not None else ""
    return (f"Cohen's d ({d['metric']}, flat − hierarchical; unit: {d['unit']}): d = {d['d']:.2f}{ci} "
            f"(n = {len(d['flat'])} flat, {len(d['hierarchical'])} hierarchical"
            + (f"; {len(d['excluded'])} few-hit IS left out" if d.get("excluded") else "") + ")")


def report_notes(comp: Mapping[str, Any]) -> dict[str, Any]:
    """What the comparison page (reporting/compare_report.py) shows from the statistics, as text:
    each row's letter, each cell's significance superscript, their legend, the Cohen's d line."""
    sig = (comp.get("statistics") or {}).get("significance") or {}
    return {"letters": sig.get("letters") or {}, "legend": legend(sig),
            "cohens_d": cohens_d_text((comp.get("statistics") or {}).get("cohens_d")),
            "markers": {row: {col: marker(sig, row, col) for col in comp["columns"]} for row in comp["rows"]}}


def seed_legend(comp: dict[str, Any]) -> str:
    """The lines under a table that say what ``n=… sd …`` and the one-seed mark mean (where cells have them)."""
    cells = [c for label in comp["rows"] for col in comp["columns"] if (c := comp["cells"][label].get(col))]
    lines = [SEED_LEGEND] if any((c.get("n_seeds") or 1) > 1 for c in cells) else []
    lines += [ONE_SEED_LEGEND] if any(c.get("one_seed") for c in cells) else []
    return "".join(f"\n{line}.\n" for line in lines)


LONG_COLUMNS = ["system", "column", "value", "sd", "lo", "hi", "n_seeds", "chance", "majority_rate", "one_seed", "method"]


def long_rows(comp: dict[str, Any]) -> list[list[Any]]:
    """The table in long form: one row per (system, column) with a value, in :data:`LONG_COLUMNS`' order."""
    out = []
    for label in comp["rows"]:
        for col in comp["columns"]:
            est = comp["cells"][label].get(col)
            if est and est.get("value") is not None:
                out.append([label, col] + [est.get(k) for k in ("value", "sd", "lo", "hi")]
                           + [est.get("n_seeds", 1), est.get("chance"), est.get("majority_rate"), bool(est.get("one_seed")),
                              est.get("method")])
    return out


def csv_text(comp: dict[str, Any]) -> str:
    """:func:`long_rows` as CSV, under a header of :data:`LONG_COLUMNS`."""
    f = io.StringIO(newline="")
    csv.writer(f).writerows([LONG_COLUMNS, *long_rows(comp)])
    return f.getvalue()


def log_comparison(cfg: CompareConfig, comp: dict[str, Any], out: Path, names: Sequence[str]) -> None:
    """``logger=wandb``: one W&B run (job type ``compare``, config redacted) holding the table in long
    form as a ``wandb.Table`` and the published files ``names`` (page, tables, plots and their data)
    as one ``comparison`` artifact. Nothing for ``logger=none``."""
    from dataclasses import asdict

    with job_tracker(cfg.logger, out=out, name=cfg.logger.name or "compare", group="compare", tags=["job:compare"],
                     config=json.loads(json.dumps(asdict(cfg), default=str)), job_type="compare", labels={}) as track:
        track.log_table("compare/table", LONG_COLUMNS, long_rows(comp))
        track.log_files("comparison", "comparison", [out / n for n in sorted(names)])


def run_compare(cfg: CompareConfig, out_dir: str | Path) -> dict[str, Any]:
    """Collect, tabulate and write ``comparison.md``, ``comparison.csv``, ``comparison.json`` and
    (``cfg.plots``) the PNG plots of plots.py as ``comparison_<plot>.png`` under ``out_dir`` (a
    sweep directory keeps run folders as its only folders)."""
    if not cfg.roots:
        raise ConfigError("python compare.py needs roots=[<dir>, ...] (sweep or run directories)")
    results = collect(cfg.roots)
    if not results:
        raise MissingFile(f"roots: no results.json with metrics under {cfg.roots}")
    used = available_metrics(results, [*cfg.metrics, cfg.effect_metric])
    for want, got in used.items():
        if want != got:
            print(f"compare: no result holds {want}; showing {got} instead (the k the evaluations used)")
    metrics = list(dict.fromkeys(used[m] for m in cfg.metrics))
    comp = comparison(results, metrics, cfg.resamples, cfg.seed, used[cfg.effect_metric], cfg.min_hits)
    table = comparison_table(comp)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str | bytes] = {"comparison.md": table, "comparison.csv": csv_text(comp)}
    from toolsense.comparison.curves import training_curves
    from toolsense.comparison.plots import render_all  # matplotlib: loaded by the job, not by importing this module

    with tempfile.TemporaryDirectory(dir=out, prefix=".plots.") as tmp:  # drawn aside, published with the rest
        drawn = render_all(comp, Path(tmp), prefix="comparison_") + training_curves(comp, results, tmp, "comparison_") if cfg.plots else []
        files.update({q.name: q.read_bytes() for p in drawn for q in (p, p.with_suffix(".json"))})  # each plot's data beside it
        files["report.html"] = render_comparison(comp, report_notes(comp), drawn, "toolsense comparison",
                                                 f"{len(results)} results under {', '.join(map(str, cfg.roots))}; {len(comp['rows'])} rows")
    comp.update({"plots": [str(out / p.name) for p in drawn]} if cfg.plots else {})
    files["comparison.json"] = json_text({"roots": list(cfg.roots), "metrics": metrics, **comp}, out / "comparison.json")
    publish(out, files, job="compare")  # every file as one set: a kill leaves the old set or the new one
    log_comparison(cfg, comp, out, list(files))
    print(table)
    print(f"wrote {out / 'comparison.md'}, .csv and .json ({len(results)} results, {len(comp['rows'])} rows)")
    return comp


def run(cfg: CompareConfig | Mapping, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Entry point of ``compare.py``: :func:`run_compare` into ``output_dir`` (default
    ``cfg.output_dir``, else outputs/compare), the folder held by one process at a time
    (``utils.rundir.holding``; ``TOOLSENSE_BUSY=fail|skip|wait``)."""
    cfg = to_config(CompareConfig, cfg)
    out = Path(output_dir or cfg.output_dir or "outputs/compare")
    out.mkdir(parents=True, exist_ok=True)
    with holding(out, "comparing") as held:
        return run_compare(cfg, out) if held else {"skipped": str(out)}


def register_configs() -> None:
    """Register :class:`CompareConfig` as ``compare_schema`` (compare.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("compare_schema", CompareConfig)


try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover - hydra is a dependency; keep the module importable without it
    Callback = object


class CompareAfterSweep(Callback):
    """Hydra callback (conf/train.yaml): when a ``-m`` sweep ends, write the comparison table of
    every evaluation under the sweep directory (jobs evaluate with ``evaluate.suite=...``) to
    ``<sweep dir>/comparison.md``. A sweep without evaluations is left alone. ``metrics``
    (train.yaml ``hydra.callbacks.compare.metrics``) replaces the headline retrieval columns."""

    def __init__(self, metrics: Sequence[str] | None = None) -> None:
        self.metrics = list(metrics) if metrics else list(HEADLINE)

    def on_multirun_end(self, config, **kwargs) -> None:
        import logging

        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.exists() or not collect([sweep_dir]):
            logging.getLogger(__name__).info("%s holds no evaluations (set evaluate.suite=...): no comparison table", sweep_dir)
            return
        run_compare(CompareConfig(roots=[str(sweep_dir)], metrics=self.metrics), sweep_dir)
