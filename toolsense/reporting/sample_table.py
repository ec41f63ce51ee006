"""Every sample of an evaluation folder as one table (columns + rows): what a tracker shows beside
the metrics (W&B: a ``wandb.Table``, evaluation/runner.py). Read from the same ``samples.jsonl``
records as report.html's sample browser (html_report.sample_records), so the two agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from toolsense.metrics.registry import METRICS
from toolsense.reporting.html_report import collect_evaluations, ks_of, sample_records

BASE_COLUMNS = ["benchmark", "system", "kind", "item_id", "tier", "query", "gold", "constrained", "free", "tool", "pred", "correct"]
"""Columns of every row; then ``hit@<k>`` (constrained) and ``f_hit@<k>`` (free-form: empty where the
evaluation decoded no free-form ranking) per k evaluated. A retrieval row leaves tool / pred / correct
empty, a probe row the rankings and hits."""


def _ranking(beams: list[dict] | None) -> str | None:
    if beams is None:
        return None
    return " | ".join(b["tool"] if b["tool"] is not None else f"invalid: {b.get('text', '')}" for b in beams)


def samples_table(evaluations: Sequence[tuple[Path, dict[str, Any]]]) -> tuple[list[str], list[list[Any]]]:
    """``(columns, rows)`` over ``(folder, result)`` pairs (html_report.collect_evaluations): one
    row per sample, rankings as the top :data:`MAX_BEAMS` tools joined by `` | ``."""
    ks = ks_of([r for _, r in evaluations]) or [1]
    columns = BASE_COLUMNS + [METRICS.item_key("Rc", k, prefix="") for k in ks] + [METRICS.item_key("Rf", k) for k in ks]
    rows = []
    for folder, res in evaluations:
        for rec in sample_records(folder, res, ks):
            gold = rec["gold"] if isinstance(rec["gold"], str) else " | ".join(map(str, rec["gold"]))
            if rec["kind"] == "retrieval":
                hits = [rec["hits"][str(k)] for k in ks] + [rec["free_hits"][str(k)] for k in ks]
                tail = [_ranking(rec["constrained"]), _ranking(rec["free"]), None, None, None] + hits
            else:
                tail = [None, None, rec["tool"], rec["pred"], rec["correct"]] + [None] * (2 * len(ks))
            rows.append([rec["bench"], rec["system"], rec["kind"], rec["id"], rec["tier"], rec["query"], gold] + tail)
    return columns, rows


def log_evaluation(track: Any, out: Path, metrics: dict[str, float]) -> None:
    """What an evaluation in ``out`` sends to its tracker (tracking.JobLog): ``metrics``, the
    samples as the table ``eval/samples`` (built only when a tracker keeps it: it reads every
    samples.jsonl), and results.json, report.html and table.md as one ``evaluation`` artifact."""
    track(metrics)
    if track.active:
        track.log_table("eval/samples", *samples_table(collect_evaluations(out)))
    track.log_files(f"{out.name}-evaluation", "evaluation", [out / "results.json", out / "report.html", out / "table.md"])
