"""PNG plots of a comparison (compare.comparison's dict, built from results.json files only):
recall by benchmark per configuration, IS by configuration (flat vs hierarchical), probe
accuracy against chance and the majority rate, and embedding drift per stage (virtual vs base
rows). Every row of the comparison that holds a value in a plot's columns is in that plot, whatever
its label spells; the values drawn are written beside each PNG as ``<plot>.json`` (rows, columns,
value / lo / hi per cell), so a reader (and tests/comparison/test_plots.py) can check that none is
missing. Matplotlib with the Agg backend: no display, no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from toolsense.metrics.registry import METRICS


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def grouped_bars(
    ax, groups: Sequence[str], series: dict[str, Sequence[float | None]], errs: dict[str, Sequence] | None = None
) -> list[float]:
    """Bars of each series side by side within each group (None = no bar); returns group centres."""
    n = max(len(series), 1)
    width = 0.8 / n
    xs = np.arange(len(groups), dtype=float)
    for j, (name, vals) in enumerate(series.items()):
        pos = xs - 0.4 + width * (j + 0.5)
        ys = [np.nan if v is None else v for v in vals]
        yerr = None
        if errs and errs.get(name) is not None:
            yerr = np.array([[0, 0] if e is None else e for e in errs[name]], dtype=float).T
        ax.bar(pos, ys, width, label=name, yerr=yerr, capsize=2)
    ax.set_xticks(xs, list(groups), rotation=20, ha="right")
    return list(xs)


def _value(est: dict | None) -> float | None:
    return None if not est or est.get("value") is None else float(est["value"])


def _err(est: dict | None) -> list[float] | None:
    if not est or est.get("lo") is None or est.get("value") is None:
        return None
    return [max(est["value"] - est["lo"], 0.0), max(est["hi"] - est["value"], 0.0)]


def _legend(ax) -> None:
    """Legend beside the axes (configuration labels are long)."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def with_data(comp: dict[str, Any], rows: Sequence[str], cols: Sequence[str]) -> list[str]:
    """The rows (in the comparison's order) holding a value in at least one of ``cols``."""
    return [r for r in rows if any(_value(comp["cells"].get(r, {}).get(c)) is not None for c in cols)]


def _save(fig, path: Path, comp: dict[str, Any], rows: Sequence[str], cols: Sequence[str]) -> Path:
    """The PNG, and beside it ``<name>.json``: the rows and columns drawn and each cell's value / lo / hi."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _plt().close(fig)
    cells = {r: {c: {k: est.get(k) for k in ("value", "lo", "hi")} for c in cols if (est := comp["cells"][r].get(c))}
             for r in rows}
    data = {"plot": path.name, "rows": list(rows), "columns": list(cols), "cells": cells}
    path.with_suffix(".json").write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    return path


def metric_plot(comp: dict[str, Any], suffix: str, rows: Sequence[str], path: Path, ylabel: str, by_row: bool) -> Path | None:
    """Bars of the columns ending in ``suffix``: grouped by benchmark with a bar per row, or
    (``by_row``) grouped by row with a bar per benchmark; with 95% intervals."""
    cols = [c for c in comp["columns"] if c.endswith(f" {suffix}") and c not in comp.get("tier_columns", ())]
    rows = with_data(comp, rows, cols)
    if not cols or not rows:
        return None
    benches = [c[: -len(suffix) - 1] for c in cols]
    cells = comp["cells"]
    fig, ax = _plt().subplots(figsize=(2.5 + 0.9 * max(len(cols), len(rows)), 3.6))
    if by_row:
        series = {b: [_value(cells[r].get(c)) for r in rows] for b, c in zip(benches, cols)}
        errs = {b: [_err(cells[r].get(c)) for r in rows] for b, c in zip(benches, cols)}
        groups = [f"{r} ({comp.get('schemes', {}).get(r) or '?'})" for r in rows]
    else:
        series = {r: [_value(cells[r].get(c)) for c in cols] for r in rows}
        errs = {r: [_err(cells[r].get(c)) for c in cols] for r in rows}
        groups = benches
    grouped_bars(ax, groups, series, errs)
    ax.set_ylabel(ylabel)
    _legend(ax)
    return _save(fig, path, comp, rows, cols)


PROBE_PLOTTED = (" acc", " bal", " calib")
"""Probe columns plotted: raw accuracy, and the debiased score a one-answer model cannot game
(MCQ position-balanced, QA calibrated) beside it."""


def probe_plot(comp: dict[str, Any], rows: Sequence[str], path: Path) -> Path | None:
    """Probe accuracy, raw and debiased, per probe column and configuration, with chance
    (dashed) and, for raw accuracy, the majority rate (dotted) drawn across each group."""
    cols = [c for c in comp["columns"] if c.endswith(PROBE_PLOTTED) and not c.startswith("retention ")]
    rows = with_data(comp, rows, cols)
    if not cols or not rows:
        return None
    fig, ax = _plt().subplots(figsize=(2.5 + 1.2 * len(cols), 3.6))
    cells = comp["cells"]
    xs = grouped_bars(ax, cols, {r: [_value(cells[r].get(c)) for c in cols] for r in rows},
                      {r: [_err(cells[r].get(c)) for c in cols] for r in rows})
    labelled: set[str] = set()
    for x, c in zip(xs, cols):
        raw = f"{c.rpartition(' ')[0]} acc"  # chance and majority rate live on the probe's raw cell
        ref = next((cells[r][raw] for r in rows if cells[r].get(raw)), {})
        lines = [("chance", ref.get("chance"), "k", "dashed"), ("majority", ref.get("majority_rate") if c == raw else None, "r", "dotted")]
        for name, y, colour, style in lines:
            if y is not None:
                ax.hlines(y, x - 0.45, x + 0.45, colors=colour, linestyles=style, label=None if name in labelled else name)
                labelled.add(name)
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    _legend(ax)
    return _save(fig, path, comp, rows, cols)


def drift_plot(comp: dict[str, Any], rows: Sequence[str], path: Path) -> Path | None:
    """Relative drift of the virtual rows and of the base-vocabulary rows per checkpoint pair,
    a bar pair per configuration."""
    pairs = [c[len("drift "): -len(" virtual")] for c in comp["columns"] if c.startswith("drift ") and c.endswith(" virtual")]
    cols = [f"drift {p} {part}" for p in pairs for part in ("virtual", "base")]
    rows = with_data(comp, rows, cols)
    if not pairs or not rows:
        return None
    series = {}
    for r in rows:
        for part in ("virtual", "base"):
            series[f"{r} {part}"] = [_value(comp["cells"][r].get(f"drift {p} {part}")) for p in pairs]
    fig, ax = _plt().subplots(figsize=(2.5 + 1.5 * len(pairs), 3.6))
    grouped_bars(ax, [p.replace("->", "→") for p in pairs], series)
    ax.set_ylabel("relative drift ‖E₂−E₁‖/‖E₁‖ (input)")
    _legend(ax)
    return _save(fig, path, comp, rows, cols)


def render_all(comp: dict[str, Any], out_dir: str | Path, prefix: str = "") -> list[Path]:
    """Every plot the comparison has data for, as ``out_dir/<prefix><name>.png`` (its data beside it as
    ``.json``); returns the PNGs written. Every row with a value in a plot's columns is drawn (Stage-1
    rows and baselines included): no row is kept or dropped by what its label spells."""
    out = Path(out_dir)
    rows = comp["rows"]
    parsed = [(c.split(" ")[-1], p) for c in comp["columns"] if (p := METRICS.parse(c.split(" ")[-1]))]
    recall = next((key for key, (m, mode, _) in parsed if m.name == "hit" and mode == "c"), None)
    is_metric = next((key for key, (m, _, _) in parsed if m.aggregation == "ratio"), None)
    made = [
        recall and metric_plot(comp, recall, rows, out / f"{prefix}recall_by_benchmark.png",
                               f"{recall} (constrained hit rate)", by_row=False),
        is_metric and metric_plot(comp, is_metric, rows, out / f"{prefix}is_by_configuration.png", is_metric, by_row=True),
        probe_plot(comp, rows, out / f"{prefix}probe_accuracy.png"),
        drift_plot(comp, rows, out / f"{prefix}drift.png"),
    ]
    return [p for p in made if p]
