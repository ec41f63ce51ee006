import json

import pytest
import torch

from toolsense.evaluation.config import DriftConfig
from toolsense.evaluation.drift import mean_pairwise_cosine, relative_drift, run_drift


def test_drift_primitives():
    a = torch.tensor([[3.0, 4.0], [0.0, 0.0]])
    assert relative_drift(a, a) == 0.0
    assert relative_drift(a, a * 1.5) == pytest.approx(0.5)
    assert mean_pairwise_cosine(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])) == pytest.approx((0 + 2 * 2 ** -0.5) / 3)


def test_run_drift_separates_virtual_rows_from_base_vocab(tiny_run, tmp_path):
    s = run_drift(tiny_run, DriftConfig(sample_size=100), tmp_path)
    base_s1, s1_s2 = s["pairs"]
    assert (base_s1["from"], base_s1["to"], s1_s2["to"]) == ("base", "stage1", "stage2")
    # stage1 is the freshly initialised model: nothing moved
    assert base_s1["input"]["virtual"] == pytest.approx(0.0, abs=1e-6) and base_s1["input"]["base_vocab"] == 0.0
    # stage2 moved only the virtual rows (by 0.5 x a standard normal direction)
    assert s1_s2["input"]["virtual"] > 0.5 and s1_s2["input"]["base_vocab"] == 0.0
    assert "output" not in s1_s2  # tiny_random is tied
    assert s1_s2["input"]["cosine_change"] == pytest.approx(s["cosine"]["stage2"]["input"] - s["cosine"]["stage1"]["input"])
    assert s["n_virtual"] == 126 and s["n_base_sample"] == 100
    assert json.loads((tmp_path / "drift.json").read_text())["pairs"][1]["input"]["virtual"] == pytest.approx(s1_s2["input"]["virtual"])
    assert (tmp_path / "drift.png").stat().st_size > 1000
    # per-token terms redraw the relative drift of any subset of rows (the report's bootstrap over tokens)
    rows = s1_s2["input"]["rows"]["virtual"]
    assert len(rows["delta_sq"]) == 126 and len(s1_s2["input"]["rows"]["base_vocab"]["norm_sq"]) == 100
    assert (sum(rows["delta_sq"]) / sum(rows["norm_sq"])) ** 0.5 == pytest.approx(s1_s2["input"]["virtual"], rel=1e-4)
    assert (tmp_path / s["run"]).resolve() == tiny_run.resolve() and not s["run"].startswith("/")  # relative to drift.json


def test_drift_task_through_the_runner(tiny_run, tmp_path):
    from toolsense.evaluation.runner import run

    s = run({"task": "drift", "run": str(tiny_run), "drift": {"checkpoints": ["stage1", "stage2"], "sample_size": 50},
             "logger": {"kind": "none"}}, tmp_path)
    assert [(p["from"], p["to"]) for p in s["pairs"]] == [("stage1", "stage2")]
    assert s["flat"]["stage1->stage2/input/base_vocab"] == 0.0 and s["flat"]["stage1->stage2/input/virtual"] > 0.5
    assert (tmp_path / "drift.json").is_file()
    with pytest.raises(ValueError, match="task=drift needs run="):
        run({"task": "drift", "logger": {"kind": "none"}}, tmp_path)
