"""study/sensitivity.py: finding 1 across k and scales, on hand-made items and on the shipped
study=tools grid (TG seeds 0 and 1, TG-H seed 0), whose verdict the review found to move with k."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from toolsense.comparison.scales import gain_contrast
from toolsense.reporting.sensitivity_table import sensitivity_markdown
from toolsense.study.findings.f1_lift import lift_sensitivity
from toolsense.study.sweep import Sweep

ARCHIVE = Path(__file__).resolve().parents[2] / "docs" / "reports" / "reproduction_tools_results.tar.xz"


def test_each_scale_on_hand_made_items():
    # standard: Stage 1 hits 2 of 4 items, Stage 2 all 4; realistic: 0 of 4 -> 1 of 4
    std = {"c": {0: ({"a": 1, "b": 1, "c": 0, "d": 0}, {"a": 1, "b": 1, "c": 1, "d": 1})}}
    real = {"c": {0: ({"p": 0, "q": 0, "r": 0, "s": 0}, {"p": 1, "q": 0, "r": 0, "s": 0})}}
    assert gain_contrast(std, real, "pp")["value"] == pytest.approx(0.5 - 0.25)
    assert gain_contrast(std, real, "normalized")["value"] == pytest.approx(2 / 2 - 1 / 4)
    logit = lambda p: __import__("math").log(p / (1 - p))  # noqa: E731
    expect = (logit(4.5 / 5) - logit(2.5 / 5)) - (logit(1.5 / 5) - logit(0.5 / 5))
    assert gain_contrast(std, real, "log_odds")["value"] == pytest.approx(expect)
    with pytest.raises(ValueError, match="sensitivity scale 'odds'"):
        gain_contrast(std, real, "odds")


@pytest.mark.skipif(not ARCHIVE.is_file(), reason="the study=tools archive is not in this checkout")
def test_the_shipped_grid_depends_on_k_and_the_scale(tmp_path):
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(tmp_path, members=[m for m in tar.getmembers() if m.name.startswith("reproduce_tools/grid/")])
    g = Sweep("grid", tmp_path / "reproduce_tools" / "grid", 5, 100)
    ks, scales = [1, 5, 10, 50], ["pp", "normalized", "log_odds"]
    sens = lift_sensitivity(g, g.rows(), ks, scales, 0.10)
    assert sens["below_floor"] == [] and set(sens["depends_on"]) == {"k", "the scale"}
    # the normalized gain at k=5 is the number the report's finding 1 gave (+33.5 pp, seeds pooled)
    assert sens["cells"][(5, "normalized")]["pooled"]["value"] == pytest.approx(0.335, abs=0.001)
    assert sens["cells"][(1, "pp")]["verdict"] == "yes" and sens["cells"][(10, "pp")]["verdict"].startswith("inconclusive")
    # seeds are a level: TG's two seeds give the pooled interval few degrees of freedom (items alone gave pp "yes" at k=5)
    assert sens["cells"][(5, "pp")]["verdict"] == "inconclusive (leans yes)" and sens["cells"][(5, "pp")]["pooled"]["df"] < 10
    odd = lift_sensitivity(g, g.rows(), [5, 7], ["pp"], 0.10)  # k=7 was not evaluated: said, not an error
    assert odd["not_evaluated"] == [7] and "k = 7 not evaluated" in sensitivity_markdown(odd, [5, 7], ["pp"], g.rows())
    high = lift_sensitivity(g, g.rows(), [5], ["pp"], 0.20)  # TG-H's standard Rc@5 (12.4%) is below 20%
    assert high["below_floor"] == ["tg_h-lora"]
    assert ("Below the retrieval floor (standard Rc@5 < 20%; shown, not pooled): tg_h-lora"
            in sensitivity_markdown(high, [5], ["pp"], g.rows()))
