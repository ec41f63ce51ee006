"""Issue 46: ``compare.py logger=wandb`` logs its table as a W&B Table (the long form of
comparison.csv, row for row) and the page, tables and plots as one ``comparison`` artifact, in an
offline run read back from its own files; the API key in the environment is written nowhere."""

from __future__ import annotations

import csv
import json
import random

from tests.evaluation.test_wandb_eval import _artifacts, _wait_for_exit
from tests.reporting.test_compare_report import _retrieval
from tests.training.test_tracking import _offline_run
from toolsense.comparison.compare import run
from toolsense.utils.publish import manifest

SENTINEL = "sentinel-wandb-key-must-not-leak-compare-0123456789"


def test_compare_logs_its_table_and_its_page_and_plots(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_API_KEY", SENTINEL)
    rng = random.Random(0)
    for name, exp, seed, skill in (("0_tg", "tg", 0, 0.7), ("1_tg", "tg", 1, 0.5), ("2_tg_h", "tg_h", 0, 0.3)):
        folder = tmp_path / "sweep" / name
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text(f"experiment: {exp}\ntuning:\n  method: lora\ntrainer:\n  seed: {seed}\n")
        _retrieval(folder / "eval" / "realistic" / "model", {"run": "../../..", "stage": "stage2"}, "tiny_random:stage2", skill, rng)
    out = tmp_path / "out"
    comp = run({"roots": [str(tmp_path / "sweep")], "metrics": ["Rc@1", "Rc@5"], "resamples": 50,
                "logger": {"kind": "wandb", "mode": "offline"}}, out)
    _wait_for_exit(out)
    w = _offline_run(out, "compare")
    assert w["config"]["roots"] == [str(tmp_path / "sweep")] and w["config"]["metrics"] == ["Rc@1", "Rc@5"]
    assert "job:compare" in w["tags"]
    ref = {k.split("/")[-1]: v for k, v in w["summary"].items() if k.startswith("compare/table")}
    table = json.loads(next(out.glob(f"wandb/offline-run-*/files/{ref['path']}")).read_text())
    with open(out / "comparison.csv", newline="") as f:
        written = list(csv.reader(f))
    assert table["columns"] == written[0] and len(table["data"]) == len(written) - 1 == 2 * 2 > 0
    for got, line in zip(table["data"], written[1:]):
        assert [("" if v is None else str(v)) for v in got] == line  # the same cells, typed in the Table
    assert {r[0] for r in table["data"]} == set(comp["rows"])
    (art,) = [a for a in _artifacts(out) if a["type"] == "comparison"]  # (wandb keeps the Table as an artifact too)
    published = set(manifest(out)["files"])  # the artifact holds exactly the files the comparison published
    want = {"comparison.md", "comparison.csv", "comparison.json", "report.html", "comparison_recall_by_benchmark.png",
            "comparison_recall_by_benchmark.json"}
    assert art["name"] == "comparison" and want <= set(art["files"]) == published
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 10 and not [p for p in files if SENTINEL.encode() in p.read_bytes()]
