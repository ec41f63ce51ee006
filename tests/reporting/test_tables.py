"""The one home of how an estimate reads: the evaluation table's cell, the comparison's cell and
the report's prose all come from ``estimate`` and agree on the digits."""

from __future__ import annotations

from toolsense.reporting.tables import comparison_cell, estimate, markdown_table, pct, probe_cells

EST = {"value": 0.1234, "lo": 0.05, "hi": 0.2}


def test_estimate_in_percent_ratio_and_signed_forms():
    assert estimate(EST) == "12.3 [5.0, 20.0]"
    assert estimate({"value": 0.5, "lo": 0.25, "hi": 0.75}, pct=False) == "0.50 [0.25, 0.75]"
    assert estimate({**EST, "sd": 0.031}) == "12.3 ± 3.1 [5.0, 20.0]"
    assert estimate({"value": 0.1234}) == "12.3" and estimate({"value": None}) == "—" and estimate(None) == "—"
    assert pct(EST) == "12.3% [5.0, 20.0]"
    assert pct({"value": -0.05, "lo": -0.1, "hi": 0.0}, signed=True) == "-5.0 pp [-10.0, 0.0]"
    assert pct({"value": 0.05, "sd": 0.01, "n_seeds": 3}, signed=True) == "+5.0 pp n=3 sd 1.0"  # seeds, their SD
    assert pct({"value": 0.05, "lo": 0.0, "hi": 0.1, "one_seed": True}, signed=True) == "+5.0 pp [0.0, 10.0] †"


def test_comparison_cells_read_like_the_evaluation_table():
    assert comparison_cell("G1 Rc@5", EST) == estimate(EST)
    assert comparison_cell("G1 IS@5", {"value": 0.8, "lo": 0.5, "hi": 1.2, "few_hits": True, "hits": 4}) == "0.80 [0.50, 1.20] ⚑ 4 hits"
    assert comparison_cell("retention mcq Δacc", {"value": 0.05, "lo": -0.01, "hi": 0.11}) == "+5.0 [-1.0, 11.0]"
    assert comparison_cell("drift stage1->stage2 virtual", {"value": 0.012345, "sd": 0.001, "lo": 0.0, "hi": 1.0,
                                                            "n_seeds": 2}) == "0.0123 n=2 sd 0.0010"
    assert comparison_cell("G1 Rc@5", {**EST, "sd": 0.02, "n_seeds": 3}) == "12.3 [5.0, 20.0] n=3 sd 2.0"
    probe = {"value": 0.25, "lo": 0.1, "hi": 0.4, "chance": 0.25, "majority_rate": 0.3, "flag": "⚠ 100% 'A'"}
    assert comparison_cell("mcq token acc", probe) == "25.0 [10.0, 40.0] (chance 25, maj. 30) ⚠ 100% 'A'"
    assert comparison_cell("mcq token acc", None) == "—"


def test_probe_cells_and_markdown():
    res = {"metrics": {"accuracy": EST, "calibrated_accuracy": {"value": 0.5, "lo": 0.4, "hi": 0.6}}, "chance": 0.5,
           "majority_rate": 0.6, "top_answer": {"answer": "No", "share": 0.95, "flagged": True}}
    assert probe_cells(res) == ["12.3 [5.0, 20.0] ⚠ 95% 'No'", "50.0", "60.0", "95% 'No'", "calib 50.0 [40.0, 60.0]"]
    assert markdown_table(["a", "b"], [[1, "x"]]) == "| a | b |\n|---|---|\n| 1 | x |\n"
