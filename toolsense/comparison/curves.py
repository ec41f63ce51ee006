"""The comparison's training curves: each configuration's runs (the training runs behind its
rows' results, from comparison.json's ``sources``), their losses per step read by
tracking/curves.py, drawn as ``<prefix>training_curves.png`` with the data beside it as ``.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from toolsense.comparison.runs import run_dir_of
from toolsense.tracking.curves import curve_data, curve_plot


def row_runs(comp: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """``row label -> its training runs`` (sorted), in the rows' order. A row whose runs are all
    another row's already (a configuration's Stage-1 row beside its Stage-2 row; a Stage 1 shared
    by arms) is not a configuration of its own; baselines and untrained models have no runs."""
    by_path = {r["_path"]: r for r in results if r.get("_path")}
    runs: dict[str, set[str]] = {}
    for key, paths in (comp.get("sources") or {}).items():
        row = key.split(" | ", 1)[0]
        for p in [paths] if isinstance(paths, str) else paths:
            run = run_dir_of(by_path[p]) if p in by_path else None
            if run:
                runs.setdefault(row, set()).add(run)
    covered: set[str] = set()
    kept: set[str] = set()
    for row in sorted((r for r in comp["rows"] if r in runs), key=lambda r: len(runs[r])):  # a configuration before a shared Stage 1
        if runs[row] - covered:
            kept.add(row)
            covered |= runs[row]
    return {row: sorted(runs[row]) for row in comp["rows"] if row in kept}


def training_curves(comp: Mapping[str, Any], results: Sequence[Mapping[str, Any]], out_dir: str | Path,
                    prefix: str = "") -> list[Path]:
    """``[out_dir/<prefix>training_curves.png]`` (its data beside it), or [] when no run logged a loss."""
    made = curve_plot(curve_data(row_runs(comp, results)), Path(out_dir) / f"{prefix}training_curves.png")
    return [made] if made else []
