"""Issue 46: training curves on the comparison page. Loss per step per configuration, read from
the runs' metrics.jsonl, seeds as a min-max band around their mean, Stage 1 and Stage 2 as panels,
a step logged again after a resume counted once (the last logged value wins); the curve data
written beside the PNG equals the metrics.jsonl rows of real tiny_random runs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.reporting.test_compare_report import _retrieval
from tests.training.conftest import TINY, compose_train
from toolsense.tracking.curves import BAND, REPEATS, curve_data, loss_by_step, seed_band


def _rows(path: Path, rows: list[dict], torn: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + torn)


def test_a_step_logged_again_after_a_resume_counts_once_with_the_last_value(tmp_path):
    """Stage 2 killed after step 3 and resumed from its step-2 checkpoint: steps 3 and 4 logged
    again (3 twice). A torn last line (the next kill) and a non-finite loss are skipped."""
    rows = [{"step": s, "stage": "stage1", "train/stage1/loss": 5.0 - s} for s in (1, 2)]
    rows += [{"step": s, "stage": "stage2", "train/stage2/loss": 3.0 - 0.1 * s} for s in (1, 2, 3)]
    rows += [{"step": 3, "stage": "stage2", "train/stage2/loss": 2.5}, {"step": 4, "stage": "stage2", "train/stage2/loss": 2.4},
             {"step": 4, "stage": "stage2", "train/stage2/train_loss": 9.0, "train/stage2/grad_norm": 1.0},
             {"step": 5, "stage": "stage2", "train/stage2/loss": float("nan")}, {"summary": {"stage2": {"train_loss": 2.6}}}]
    _rows(tmp_path / "metrics.jsonl", rows, torn='{"step": 6, "stage": "stage2", "train/stage2/lo')
    assert loss_by_step(tmp_path / "metrics.jsonl") == {"stage1": {1: 4.0, 2: 3.0}, "stage2": {1: 2.9, 2: 2.8, 3: 2.5, 4: 2.4}}


def test_seeds_make_a_min_max_band_around_their_mean_over_the_seeds_that_logged_each_step():
    band = seed_band({"a": {1: 4.0, 2: 3.0, 3: 1.0}, "b": {1: 2.0, 2: 3.5}})
    assert band["steps"] == [1, 2, 3] and band["seeds"] == {"a": [4.0, 3.0, 1.0], "b": [2.0, 3.5, None]}
    assert (band["mean"], band["lo"], band["hi"], band["n"]) == ([3.0, 3.25, 1.0], [2.0, 3.0, 1.0], [4.0, 3.5, 1.0], [2, 2, 1])
    data = curve_data({"x": ["/nowhere/run"]})
    assert data["curves"] == {} and data["band"] == BAND and data["repeats"] == REPEATS


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory) -> Path:
    """Two seeds of one configuration, trained for real (tiny_random: 2 Stage-1 and 3 Stage-2 steps,
    a loss logged every step), each with a retrieval result beside it for compare.py to find."""
    from toolsense.training import run

    root = tmp_path_factory.mktemp("curves") / "sweep"
    over = [o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps"))]
    for seed in (0, 1):
        out = root / f"{seed}_tg-lora"
        run(compose_train([*over, "experiment=tg", "stage1.max_steps=2", "stage2.max_steps=3", f"trainer.seed={seed}",
                           f"output_dir={out}"]))
        _retrieval(out / "eval" / "realistic" / "model", {"run": "../../..", "stage": "stage2", "model": "tiny_random"},
                   "tiny_random:stage2", 0.5, random.Random(seed))
    return root


def test_the_comparison_draws_the_real_runs_loss_and_writes_it_beside_the_plot(tiny_sweep, tmp_path):
    """The curve data of compare.py equals the two runs' metrics.jsonl rows (per stage, per step),
    a step re-logged after a resume counts once with its last value, and the page embeds the plot."""
    from toolsense.comparison.compare import CompareConfig, run_compare

    logged = {}
    for run in sorted(tiny_sweep.iterdir()):
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        logged[run.name] = {st: {r["step"]: r[f"train/{st}/loss"] for r in rows if f"train/{st}/loss" in r} for st in ("stage1", "stage2")}
        assert sorted(logged[run.name]["stage1"]) == [1, 2] and sorted(logged[run.name]["stage2"]) == [1, 2, 3]
    resumed = tiny_sweep / "1_tg-lora" / "metrics.jsonl"  # a resume that redid step 2 of Stage 2: logged twice, the last counts
    with open(resumed, "a", encoding="utf-8") as f:
        f.write(json.dumps({"step": 2, "stage": "stage2", "train/stage2/loss": 0.125}) + "\n")
    logged["1_tg-lora"]["stage2"][2] = 0.125
    comp = run_compare(CompareConfig(roots=[str(tiny_sweep)], metrics=["Rc@1"], resamples=50), tmp_path / "out")
    data = json.loads((tmp_path / "out" / "comparison_training_curves.json").read_text())
    assert (tmp_path / "out" / "comparison_training_curves.png").read_bytes()[:4] == b"\x89PNG"
    assert list(data["curves"]) == [r for r in comp["rows"] if r != "bm25"] and data["stages"] == ["stage1", "stage2"]
    (curve,) = data["curves"].values()
    assert sorted(Path(r).name for r in curve["runs"]) == ["0_tg-lora", "1_tg-lora"]
    for stage in ("stage1", "stage2"):
        band = curve["stages"][stage]
        assert band["steps"] == sorted(logged["0_tg-lora"][stage])
        got = {Path(r).name: dict(zip(band["steps"], vals)) for r, vals in band["seeds"].items()}
        assert got == {name: logged[name][stage] for name in logged}
        for i, step in enumerate(band["steps"]):
            values = [logged[name][stage][step] for name in logged]
            assert (band["lo"][i], band["hi"][i], band["n"][i]) == (min(values), max(values), 2)
            assert band["mean"][i] == pytest.approx(sum(values) / 2)
    assert any(p.endswith("comparison_training_curves.png") for p in comp["plots"])
    assert "comparison_training_curves.png</figcaption>" in (tmp_path / "out" / "report.html").read_text()
