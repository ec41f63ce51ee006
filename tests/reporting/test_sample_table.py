"""Issue 46: the samples table an evaluation logs to its tracker (W&B: ``eval/samples``) holds the
free-form hits beside the constrained ones, per k, read from samples.jsonl; empty where the
evaluation decoded no free-form ranking (a baseline), and for probe rows."""

from __future__ import annotations

import json
from pathlib import Path

from toolsense.reporting.html_report import collect_evaluations
from toolsense.reporting.sample_table import samples_table


def _evaluation(folder: Path, system: str, samples: list[dict], kind: str = "retrieval") -> None:
    folder.mkdir(parents=True)
    metrics = {"accuracy": {"value": 0.5}} if kind != "retrieval" else {f"R{m}@{k}": {"value": 0.5} for m in "cf" for k in (1, 5)}
    (folder / "results.json").write_text(json.dumps({"benchmark": "realistic" if kind == "retrieval" else kind, "system": system,
                                                     "kind": kind, "metrics": metrics}))
    (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))


def test_the_samples_table_has_free_form_hits_beside_the_constrained_ones(tmp_path):
    beams = [{"tool": "a&&x"}, {"tool": "b&&y"}]
    model = [{"item_id": "q0", "query": "zero", "gold": ["b&&y"], "constrained": beams, "free": beams[::-1],
              "metrics": {"c_hit@1": 0.0, "c_hit@5": 1.0, "f_hit@1": 1.0, "f_hit@5": 1.0}},
             {"item_id": "q1", "query": "one", "gold": ["a&&x"], "constrained": beams, "free": [{"tool": None, "text": "zz"}],
              "metrics": {"c_hit@1": 1.0, "c_hit@5": 1.0, "f_hit@1": 0.0, "f_hit@5": 0.0}}]
    bm25 = [{"item_id": "q0", "query": "zero", "gold": ["b&&y"], "constrained": beams, "free": None,
             "metrics": {"c_hit@1": 0.0, "c_hit@5": 1.0}}]
    probe = [{"item_id": "m0", "question": "which?", "tool": "a&&x", "gold": "A", "pred": "B", "correct": False}]
    _evaluation(tmp_path / "realistic" / "model", "model", model)
    _evaluation(tmp_path / "realistic" / "bm25", "bm25", bm25)
    _evaluation(tmp_path / "mcq" / "token", "token", probe, kind="mcq")
    columns, rows = samples_table(collect_evaluations(tmp_path))
    assert columns[-4:] == ["hit@1", "hit@5", "f_hit@1", "f_hit@5"]
    got = {(r["system"], r["item_id"]): [r[c] for c in columns[-4:]] for r in (dict(zip(columns, row)) for row in rows)}
    assert got == {("model", "q0"): [0, 1, 1, 1], ("model", "q1"): [1, 1, 0, 0], ("bm25", "q0"): [0, 1, None, None],
                   ("token", "m0"): [None, None, None, None]}
