"""A pilot's report section (a study's ``analysis.regime`` and ``curves``): each arm's curve — the registered metric
against Stage-2 epochs, read from its run's checkpoint evaluations (curves.py) and the run's own
evaluation after training — and the setting the registered rules choose: per arm the first point
that reaches its threshold within the time rule, else (the fallback) its best point within the time
rule with the gap said. Times are measured on a shared machine; the load average sampled while the
study ran (timings.jsonl) is shown beside them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import yaml

from toolsense.curves.points import CURVES, POINT_FILE, TIMINGS_FILE
from toolsense.reporting.tables import markdown_table
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.publish import load_published_json


def _json(path: Path, published: bool = False) -> dict[str, Any]:
    """The file's object, {} when absent or unreadable; ``published``: as its folder's manifest published it
    (utils/publish.py), so a results file a kill left half written or changed since counts as absent."""
    try:
        return load_published_json(path) if published else json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def model_score(results: dict[str, Any], rule: Any) -> Optional[dict[str, float]]:
    """The model's ``<metric>@<k>`` estimate (value, lo, hi) on the rule's benchmark in an evaluation's results.json."""
    for r in results.get("results", []):
        if r.get("benchmark") == rule.benchmark and ":" in str(r.get("system")):  # the model's row (baselines: bm25, dense)
            est = r.get("metrics", {}).get(f"{rule.metric}@{rule.k}")
            if est and est.get("value") is not None:
                return est
    return None


def _stage_seconds(run: Path) -> dict[str, Any]:
    """Each finished stage's train_runtime, and ``at``: (stage, step) -> wall seconds since the run's first logged step
    (a run still training has no runtime yet: its points are timed by these)."""
    out: dict[str, Any] = {"at": {}}
    rows = JsonlStore(run / "metrics.jsonl", repair=False).rows if (run / "metrics.jsonl").is_file() else []
    first = next((float(r["time"]) for r in rows if "time" in r), None)
    for row in rows:
        for stage in ("stage1", "stage2"):
            if f"train/{stage}/train_runtime" in row:
                out[stage] = float(row[f"train/{stage}/train_runtime"])
        if first is not None and row.get("stage") and "step" in row and "time" in row:
            out["at"][(row["stage"], int(row["step"]))] = float(row["time"]) - first
    return out


def _train_seconds(secs: dict[str, Any], epoch: Optional[float], total: Optional[float], step: Optional[int]) -> Optional[float]:
    """Stage 1 + that share of Stage 2 where both stages finished; else the wall time from the run's first logged step
    to the point's step (logged every trainer.logging_steps: the last row at or before it)."""
    if epoch and total and {"stage1", "stage2"} <= set(secs):
        return secs["stage1"] + secs["stage2"] * epoch / total
    before = [t for (stage, s), t in secs["at"].items() if stage == "stage2" and step is not None and s <= step]
    return max(before) if before else None


def _epochs(cfg: dict[str, Any], stage: str) -> Optional[float]:
    s = cfg.get(stage) or {}
    return float(s["epochs"]) if s.get("max_steps", -1) == -1 and s.get("epochs") is not None else None


def arm_points(root: Path, sweep: str, rule: Any) -> list[dict[str, Any]]:
    """Every measured point of the sweep's runs: run, Stage-1 epochs, Stage-2 epoch, step, score, the
    training time to reach it (Stage 1 + that share of Stage 2, when measured) and its evaluation's seconds."""
    points = []
    for run in sorted(p for p in (root / sweep).glob("*") if (p / "config.yaml").is_file()):
        cfg = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8")) or {}
        secs, total = _stage_seconds(run), _epochs(cfg, "stage2")
        found = []
        for d in sorted((root / CURVES / sweep / run.name).glob("stage2-*")):
            point, res = _json(d / POINT_FILE), _json(d / "results.json", published=True)
            if (d / "done.json").is_file() and model_score(res, rule):
                found.append((point.get("epoch"), point.get("step"), model_score(res, rule), res.get("seconds")))
        final = _json(run / "eval" / "results.json", published=True)
        if model_score(final, rule) and (run / "done.json").is_file():
            found.append((total, None, model_score(final, rule), final.get("seconds")))
        for epoch, step, est, eval_s in found:
            train_s = _train_seconds(secs, epoch, total, step)
            points.append({"run": run.name, "stage1_epochs": _epochs(cfg, "stage1"), "epoch": epoch, "step": step, "est": est,
                           "train_s": train_s, "eval_s": eval_s, "n_tools": len(_json(run / "index.json").get("tools", []))})
    return sorted(points, key=lambda p: (p["run"], p["epoch"] or 0))


def _hours(p: dict[str, Any]) -> Optional[float]:
    return None if p["train_s"] is None else (p["train_s"] + (p["eval_s"] or 0)) / 3600


def choose(points: list[dict[str, Any]], threshold: float, rule: Any) -> tuple[str, Optional[dict[str, Any]]]:
    """(``meets`` | ``fallback`` | ``over`` | ``none``, the point): the first point at or above ``threshold`` whose
    run time is within the rule, else the best point within it, else (``over``) the best point measured, whose
    time is over the rule, unknown or whose catalog is too small."""
    timed = [p for p in points if _hours(p) is not None and _hours(p) <= rule.max_run_hours and p["n_tools"] >= rule.min_tools]
    meets = [p for p in timed if p["est"]["value"] >= threshold]
    if meets:
        return "meets", min(meets, key=lambda p: (p["epoch"] or 0))
    if timed:
        return "fallback", max(timed, key=lambda p: p["est"]["value"])
    return ("over", max(points, key=lambda p: p["est"]["value"])) if points else ("none", None)


def load_note(root: Path) -> str:
    rows = [r for r in JsonlStore(root / TIMINGS_FILE, repair=False).rows if r.get("event") == "load"] \
        if (root / TIMINGS_FILE).is_file() else []
    if not rows:
        return "No load average was sampled while the study ran."
    one = [r["loadavg"][0] for r in rows]
    return (f"Load average (1 min) sampled {len(rows)} times while the study ran on {rows[0].get('cpus')} CPUs: median "
            f"{sorted(one)[len(one) // 2]:.1f}, max {max(one):.1f} — the machine was shared; times are wall times under that load.")


def _pct(est: dict[str, float]) -> str:
    return f"{100 * est['value']:.1f}% [{100 * est['lo']:.1f}, {100 * est['hi']:.1f}]" if est.get("lo") is not None \
        else f"{100 * est['value']:.1f}%"


def regime_section(root: str | Path, rule: Any, registered: bool, plots_dir: Optional[Path] = None,
                   report: Optional[Path] = None) -> str:
    """The rules (``rule``: the study's RegimeRule, as registered when ``registered``), each arm's curve,
    and the setting they choose (see the module doc)."""
    root, name = Path(root), f"{rule.metric}@{rule.k}"
    lines = [f"Rules ({'registered with the plan' if registered else 'from the config: not registered'}): after Stage 2, constrained "
             f"{name} on `{rule.benchmark}` at least " + ", ".join(f"{100 * v:.0f}% for {a}" for a, v in rule.min_score.items())
             + f"; a catalog of at least {rule.min_tools:,} tools; one run (training and its evaluation) within "
             f"{rule.max_run_hours:g} h on {rule.cores} cores; at most {rule.max_runs} runs; fallback: {rule.fallback}.\n"]
    rows, verdicts, curves = [], [], {}
    for arm, threshold in rule.min_score.items():
        pts = arm_points(root, arm, rule)
        curves[arm] = [(p["epoch"], p["est"]) for p in pts if p["epoch"] is not None]
        for p in pts:
            h = _hours(p)
            rows.append([arm, p["run"], p["stage1_epochs"], f"{p['epoch']:.2f}" if p["epoch"] else "?", p["step"] or "end",
                         _pct(p["est"]), "?" if h is None else f"{h:.2f}", "yes" if p["est"]["value"] >= threshold else "no"])
        kind, best = choose(pts, threshold, rule)
        verdicts.append(_verdict(arm, threshold, kind, best, name))
    lines += [markdown_table(["arm", "run", "Stage-1 epochs", "Stage-2 epoch", "step", name, "h (train to here + eval)",
                              "≥ threshold"], rows) if rows else "No point measured yet.", "", *verdicts, "", load_note(root)]
    if plots_dir is not None and any(curves.values()):
        plot = _plot(curves, Path(plots_dir) / "curves.png", name)
        lines.append(f"\n![{name} against Stage-2 epochs]({os.path.relpath(plot, Path(report or '.').parent)})")
    return "\n".join(lines) + "\n"


def _verdict(arm: str, threshold: float, kind: str, p: Optional[dict[str, Any]], name: str) -> str:
    if p is None:
        return f"- **{arm}**: no point measured yet."
    where = f"Stage 1 {p['stage1_epochs']} ep, Stage 2 {p['epoch']:.2f} ep ({p['run']})"
    if kind == "over":
        return (f"- **{arm}**: no point meets the time and catalog rules yet; the best measured, {where}: "
                f"{name} {_pct(p['est'])} ({'time not measured yet' if _hours(p) is None else f'{_hours(p):.2f} h'}).")
    if kind == "meets":
        return f"- **{arm}: meets** {100 * threshold:.0f}% at {where}: {name} {_pct(p['est'])}."
    return (f"- **{arm}: fallback** — best within the budget {where}: {name} {_pct(p['est'])}, "
            f"{100 * (threshold - p['est']['value']):.1f} pp below {100 * threshold:.0f}%.")


def _plot(curves: dict[str, list[tuple[float, dict[str, float]]]], path: Path, name: str) -> Path:
    """Each arm's curve (Stage-2 epoch -> its estimate), and beside it the JSON of the points drawn (comparison/plots.py)."""
    from toolsense.comparison.plots import _plt, _save

    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for arm, pts in curves.items():
        if pts:
            xs, ests = zip(*sorted(pts, key=lambda p: p[0]))
            ax.plot(xs, [100 * e["value"] for e in ests], marker="o", label=arm)
    ax.set_xlabel("Stage-2 epochs")
    ax.set_ylabel(f"{name} (%)")
    ax.legend(fontsize=7)
    cols = sorted({f"epoch {x:g}" for pts in curves.values() for x, _ in pts}, key=lambda c: float(c.split()[1]))
    comp = {"cells": {arm: {f"epoch {x:g}": e for x, e in pts} for arm, pts in curves.items()}}
    return _save(fig, path, comp, list(curves), cols)
