"""Ablation tables: every per-evaluation ``results.json`` under one or more directories (a Hydra
sweep, several run directories) in ONE table — a row per model (training run + stage) or
baseline, a column per benchmark × metric, each cell ``value [95% interval]``.

    python evaluate.py task=compare compare.roots=[multirun/2026-11-29_10-00-00]

``drift.json`` files (``task=drift``, or train.py ``evaluate.drift=true``) add drift columns.
A model row is labelled by its training run's ``experiment-tuning`` (read from the run's
``config.yaml``), so the 8-run ablation reads tg-lora, tg-full, tg_h-lora, ... Baselines do
not depend on the run; each (baseline, benchmark) appears once, and copies that disagree
(e.g. evaluated on different benchmark files) are an error rather than a silent pick.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from toolsense.evaluation.outputs import benchmark_label, fmt, markdown_table, write_json
from toolsense.utils.io import DataError
from toolsense.utils.progress import progress
from toolsense.utils.rundir import RunDir


@dataclass
class CompareConfig:
    roots: list[str] = field(default_factory=list)
    """Directories searched recursively for results.json (sweep dirs, run dirs, eval dirs)."""
    metrics: list[str] = field(default_factory=lambda: ["Rc@1", "Rf@1", "IS@1", "Rc@10", "Rf@10"])
    """Retrieval metrics, one column each per retrieval benchmark; probes always show accuracy."""


def collect(roots: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The per-evaluation results under ``roots`` (combined summaries, which hold a
    ``results`` list instead of metrics, are skipped so nothing is counted twice)."""
    found = []
    for root in map(Path, roots):
        if not root.exists():
            raise FileNotFoundError(f"compare.roots: {root} does not exist")
        for path in progress(sorted([*root.rglob("results.json"), *root.rglob("drift.json")]), desc=f"compare {root}", unit="file", min_total=50):
            try:
                res = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from e
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
    """A drift.json (evaluate.py task=drift) as a result row: relative drift of the virtual-token
    rows and of the base-vocabulary sample of the input embeddings, per checkpoint pair."""
    if "pairs" not in drift or "run" not in drift:
        raise DataError(f"{path}: field 'pairs' or 'run' is missing (not a task=drift output?)")
    metrics = {}
    for p in drift["pairs"]:
        for key, short in (("virtual", "virtual"), ("base_vocab", "base")):
            metrics[f"{p['from']}->{p['to']} {short}"] = {"value": p["input"][key]}
    return {"benchmark": "drift", "system": "drift", "kind": "drift", "metrics": metrics,
            "source": {"run": drift["run"], "stage": "stage2"}}


@functools.lru_cache(maxsize=None)
def _run_label(run: str) -> str:
    """``experiment-tuning`` of a run (its config.yaml is read once, not once per results file)."""
    return RunDir(run).label()


def row_label(res: dict[str, Any]) -> tuple[str, bool, str | None]:
    """(label, is_baseline, run directory) of the system that produced ``res``."""
    src = res.get("source") or {}
    if "baseline" in src:
        return str(res["system"]), True, None
    if src.get("run"):
        label = _run_label(src["run"])
        stage = src.get("stage") or "stage2"
        return (label if stage == "stage2" else f"{label}:{stage}"), False, str(Path(src["run"]).resolve())
    return str(src.get("model") or res["system"]), False, None


def _labels(results: Sequence[dict[str, Any]]) -> list[tuple[str, bool]]:
    """Row labels; runs that share an experiment-tuning label (seeds, learning rates) are told
    apart by their run directory's name."""
    raw = [row_label(r) for r in results]
    runs: dict[str, set] = {}
    for label, _, run in raw:
        if run is not None:
            runs.setdefault(label, set()).add(run)
    return [(f"{label} [{Path(run).name}]" if run is not None and len(runs[label]) > 1 else label, base)
            for label, base, run in raw]


def comparison(results: Sequence[dict[str, Any]], metrics: Sequence[str]) -> dict[str, Any]:
    """Rows and columns of the ablation table, plus the raw estimates per cell. Columns:
    retrieval benchmarks × metrics, then probe accuracies, then embedding drift (input
    embeddings, virtual rows vs base-vocabulary sample), each in order of first appearance."""
    cells: dict[str, dict[str, dict]] = {}
    origin: dict[tuple[str, str], dict] = {}
    retrieval_cols: list[str] = []
    probe_cols: list[str] = []
    drift_cols: list[str] = []
    baselines: set[str] = set()
    for res, (label, is_baseline) in zip(results, _labels(results)):
        if res["kind"] == "retrieval":
            cols = {f"{benchmark_label(res)} {m}": res["metrics"].get(m) for m in metrics}
        elif res["kind"] == "drift":
            cols = {f"drift {k}": v for k, v in res["metrics"].items()}
        else:  # a probe: token / control mode is part of the column
            cols = {f"{benchmark_label(res)} {res['system']} acc": res["metrics"].get("accuracy")}
        for col, est in cols.items():
            columns = {"retrieval": retrieval_cols, "drift": drift_cols}.get(res["kind"], probe_cols)
            if col not in columns:
                columns.append(col)
            key = (label, col)
            if key in origin:
                if is_baseline and est == cells[label][col]:
                    continue  # the same baseline evaluated again next to another run
                raise DataError(f"{res['_path']}: a second, different result for {label!r} / {col!r} "
                                f"(first: {origin[key]['_path']}); give compare.roots one evaluation per run")
            origin[key] = res
            cells.setdefault(label, {})[col] = est
        if is_baseline:
            baselines.add(label)
    models = sorted(k for k in cells if k not in baselines)
    order = models + sorted(baselines)
    return {"columns": retrieval_cols + probe_cols + drift_cols, "rows": order, "cells": cells, "baselines": sorted(baselines),
            "sources": {f"{k[0]} | {k[1]}": v["_path"] for k, v in origin.items()}}


def comparison_table(comp: dict[str, Any]) -> str:
    header = ["system"] + comp["columns"]
    rows = []
    for label in comp["rows"]:
        row = [label]
        for col in comp["columns"]:
            est = comp["cells"][label].get(col)
            if col.startswith("drift "):  # a plain ratio, no interval
                row.append("—" if est is None else f"{est['value']:.4f}")
            else:
                row.append(fmt(est, pct=not col.split(" ")[-1].startswith("IS@")))
        rows.append(row)
    return markdown_table(header, rows)


def run_compare(cfg: CompareConfig, out_dir: str | Path) -> dict[str, Any]:
    if not cfg.roots:
        raise ValueError("task=compare needs compare.roots=[<dir>, ...] (sweep or run directories)")
    results = collect(cfg.roots)
    if not results:
        raise FileNotFoundError(f"compare.roots: no results.json with metrics under {cfg.roots}")
    comp = comparison(results, cfg.metrics)
    table = comparison_table(comp)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.md").write_text(table, encoding="utf-8")
    write_json(out / "comparison.json", {"roots": list(cfg.roots), "metrics": list(cfg.metrics), **comp})
    print(table)
    print(f"wrote {out / 'comparison.md'} and {out / 'comparison.json'} ({len(results)} results, {len(comp['rows'])} rows)")
    return comp


try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover - hydra is a dependency; keep the module importable without it
    Callback = object


class CompareAfterSweep(Callback):
    """Hydra callback (conf/train.yaml): when a ``-m`` sweep ends, write the comparison table of
    every evaluation under the sweep directory (jobs evaluate with ``evaluate.suite=...``) to
    ``<sweep dir>/comparison.md``. A sweep without evaluations is left alone."""

    def on_multirun_end(self, config, **kwargs) -> None:
        import logging

        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.exists() or not collect([sweep_dir]):
            logging.getLogger(__name__).info("%s holds no evaluations (set evaluate.suite=...): no comparison table", sweep_dir)
            return
        run_compare(CompareConfig(roots=[str(sweep_dir)]), sweep_dir)
