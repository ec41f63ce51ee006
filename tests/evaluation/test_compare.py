"""Ablation tables: results.json files under sweep/run directories → one table, a row per run
(labelled experiment-tuning from the run's config.yaml) or baseline, a column per benchmark ×
metric; duplicates of a baseline fold, conflicting results are refused."""

from __future__ import annotations

import json

import pytest

from toolsense.evaluation.compare import CompareConfig, collect, comparison, comparison_table, run_compare
from toolsense.utils.io import DataError


def _est(v):
    return {"value": v, "lo": v - 0.1, "hi": v + 0.1}


def _run(root, name, experiment, tuning, rc1, acc):
    run = root / name
    (run / "eval" / "standard" / "model").mkdir(parents=True)
    (run / "config.yaml").write_text(f"experiment: {experiment}\ntuning:\n  method: {tuning}\n")
    src = {"run": str(run), "stage": "stage2", "model": "tiny_random"}
    (run / "eval" / "standard" / "model" / "results.json").write_text(json.dumps({
        "benchmark": "standard", "system": "tiny_random:stage2", "kind": "retrieval", "source": src,
        "metrics": {"Rc@1": _est(rc1), "Rf@1": _est(rc1 / 2), "IS@1": _est(0.5)}}))
    (run / "eval" / "mcq" / "token").mkdir(parents=True)
    (run / "eval" / "mcq" / "token" / "results.json").write_text(json.dumps({
        "benchmark": "mcq", "system": "token", "kind": "mcq", "source": src, "chance": 0.25,
        "metrics": {"accuracy": _est(acc)}}))
    (run / "eval" / "standard" / "bm25").mkdir(parents=True)
    (run / "eval" / "standard" / "bm25" / "results.json").write_text(json.dumps({
        "benchmark": "standard", "system": "bm25", "kind": "retrieval", "source": {"baseline": {"kind": "bm25"}},
        "metrics": {"Rc@1": _est(0.7)}}))
    (run / "eval" / "results.json").write_text(json.dumps({"results": []}))  # the combined summary: skipped
    return run


def test_one_row_per_run_and_baseline(tmp_path):
    _run(tmp_path, "0_tg-lora", "tg", "lora", 0.4, 0.3)
    _run(tmp_path, "1_tg_3fm-full", "tg_3fm", "full", 0.6, 0.5)
    comp = comparison(collect([tmp_path]), ["Rc@1", "Rf@1", "IS@1"])
    assert comp["rows"] == ["tg-lora", "tg_3fm-full", "bm25"]  # models first, then baselines once
    assert comp["columns"] == ["standard Rc@1", "standard Rf@1", "standard IS@1", "mcq token acc"]
    assert comp["cells"]["tg_3fm-full"]["standard Rc@1"]["value"] == 0.6
    assert comp["cells"]["tg-lora"]["mcq token acc"]["value"] == 0.3
    assert comp["cells"]["bm25"] == {"standard Rc@1": _est(0.7), "standard Rf@1": None, "standard IS@1": None}
    table = comparison_table(comp).splitlines()
    assert table[2] == "| tg-lora | 40.0 [30.0, 50.0] | 20.0 [10.0, 30.0] | 0.50 [0.40, 0.60] | 30.0 [20.0, 40.0] |"
    assert table[4].startswith("| bm25 | 70.0 [60.0, 80.0] | — | — | — |")


def test_same_label_runs_are_told_apart_by_directory(tmp_path):
    _run(tmp_path, "seed0", "tg", "lora", 0.4, 0.3)
    _run(tmp_path, "seed1", "tg", "lora", 0.5, 0.3)
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["rows"] == ["tg-lora [seed0]", "tg-lora [seed1]", "bm25"]


def test_conflicting_baselines_and_bad_files_are_named(tmp_path):
    a = _run(tmp_path / "a", "r", "tg", "lora", 0.4, 0.3)
    b = _run(tmp_path / "b", "r2", "tg_h", "lora", 0.4, 0.3)
    path = b / "eval" / "standard" / "bm25" / "results.json"
    res = json.loads(path.read_text())
    res["metrics"]["Rc@1"] = _est(0.2)  # BM25 on another benchmark file: not the same baseline
    path.write_text(json.dumps(res))
    with pytest.raises(DataError, match=r"bm25/results.json: a second, different result for 'bm25' / 'standard Rc@1'"):
        comparison(collect([tmp_path]), ["Rc@1"])
    (a / "eval" / "broken").mkdir()
    (a / "eval" / "broken" / "results.json").write_text('{"benchmark": ')
    with pytest.raises(DataError, match=r"broken/results.json:1: not valid JSON"):
        collect([a])
    with pytest.raises(FileNotFoundError, match="compare.roots: .*nowhere does not exist"):
        collect([tmp_path / "nowhere"])


def test_drift_files_add_columns_to_their_run(tmp_path):
    run = _run(tmp_path, "0_tg-lora", "tg", "lora", 0.4, 0.3)
    (run / "eval" / "drift").mkdir()
    (run / "eval" / "drift" / "drift.json").write_text(json.dumps({"run": str(run), "pairs": [
        {"from": "base", "to": "stage1", "input": {"virtual": 0.25, "base_vocab": 0.0, "cosine_change": 0.1}},
        {"from": "stage1", "to": "stage2", "input": {"virtual": 0.125, "base_vocab": 0.0, "cosine_change": 0.0}}]}))
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["columns"][-4:] == ["drift base->stage1 virtual", "drift base->stage1 base",
                                    "drift stage1->stage2 virtual", "drift stage1->stage2 base"]
    assert comp["cells"]["tg-lora"]["drift stage1->stage2 virtual"] == {"value": 0.125}
    assert comparison_table(comp).splitlines()[2].endswith("| 0.2500 | 0.0000 | 0.1250 | 0.0000 |")
    (run / "eval" / "drift" / "drift.json").write_text(json.dumps({"pairs": []}))
    with pytest.raises(DataError, match=r"drift.json: field 'pairs' or 'run' is missing"):
        collect([tmp_path])


def test_run_compare_writes_table_and_json(tmp_path, capsys):
    _run(tmp_path / "sweep", "0", "tg", "lora", 0.4, 0.3)
    run_compare(CompareConfig(roots=[str(tmp_path / "sweep")], metrics=["Rc@1"]), tmp_path / "out")
    assert (tmp_path / "out" / "comparison.md").read_text().startswith("| system | standard Rc@1 | mcq token acc |")
    saved = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert saved["rows"] == ["tg-lora", "bm25"] and "tg-lora | standard Rc@1" in saved["sources"]
    assert "wrote" in capsys.readouterr().out
