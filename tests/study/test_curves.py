"""Learning curves from one run's checkpoints (curves/): which checkpoints are evaluated and when, a
point's done.json, the load samples, and the regime section choosing a setting by the registered rules;
the regime rule leaves the plans registered before it with their hashes."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest

from toolsense.curves import points
from toolsense.curves.config import RegimeRule
from toolsense.curves.points import CurveEvaluations, complete_checkpoints
from toolsense.curves.regime import arm_points, choose, regime_section
from toolsense.plan.config import AnalysisPlan
from toolsense.plan.registration import plan_dict, plan_hash
from toolsense.study.config import StudyConfig

ROOT = Path(__file__).resolve().parents[2]


def _checkpoint(run: Path, step: int, max_steps: int, per_epoch: int = 2) -> None:
    d = run / "checkpoints" / "stage2" / f"checkpoint-{step}"
    d.mkdir(parents=True)
    (d / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": max_steps, "epoch": step / per_epoch}))


def _run(root: Path, sweep: str = "tg", name: str = "0_tg-lora", epochs: float = 3.0) -> Path:
    run = root / sweep / name
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(f"stage1: {{epochs: 1.0, max_steps: -1}}\nstage2: {{epochs: {epochs}, max_steps: -1}}\n")
    (run / "index.json").write_text(json.dumps({"tools": [f"t{i}" for i in range(1200)]}))
    return run


def test_a_checkpoint_is_evaluated_once_a_later_one_or_the_stage_exists_and_never_the_stages_last(tmp_path):
    run = _run(tmp_path)
    for step in (2, 4, 6):
        _checkpoint(run, step, max_steps=6)
    assert complete_checkpoints(run, "stage2") == [2, 4]  # 6 may still be being written
    last = run / "checkpoints" / "stage2" / "checkpoint-6"
    (last / "adapter_model.safetensors").write_text("")
    (last / "loss_total.json").write_text("{}")
    assert complete_checkpoints(run, "stage2") == [2, 4]  # a LoRA checkpoint is whole once its embedding rows are in
    (last / "embedding_rows.pt").write_text("")
    assert complete_checkpoints(run, "stage2") == [2, 4]  # whole, but 6 is the stage's end: never evaluated
    (run / "stage2").mkdir()
    (run / "stage2" / "config.json").write_text("{}")
    assert complete_checkpoints(run, "stage2") == [2, 4]  # 6 is the stage's end: the run's own evaluation scores it
    mid = _run(tmp_path, name="2_tg-lora")
    _checkpoint(mid, 2, max_steps=6)
    (mid / "checkpoints" / "stage2" / "checkpoint-2" / "loss_total.json").write_text("{}")
    assert complete_checkpoints(mid, "stage2") == [2]  # a full fine-tuning checkpoint with its loss file: whole
    other = _run(tmp_path, name="1_tg-lora")
    for step in (2, 4):
        _checkpoint(other, step, max_steps=5)  # the stage ended at 5, past its last checkpoint
    (other / "stage2").mkdir()
    (other / "stage2" / "config.json").write_text("{}")
    assert complete_checkpoints(other, "stage2") == [2, 4]
    assert complete_checkpoints(tmp_path / "none", "stage2") == []


def test_the_markers_are_the_files_training_writes_last():
    from toolsense.training.resume import LOSS_FILE
    from toolsense.training.trainer import ROWS_FILE

    assert points.MARKERS == (LOSS_FILE, ROWS_FILE)


def test_points_run_one_at_a_time_are_marked_done_and_a_failure_is_not_retried(tmp_path, monkeypatch):
    run = _run(tmp_path)
    for step in (2, 4, 6):
        _checkpoint(run, step, max_steps=8)
    writes = ("import json,sys,pathlib; o=pathlib.Path(sys.argv[-1]); step=sys.argv[1]; "
              "sys.exit(3) if step=='checkpoint=4' else o.joinpath('results.json').write_text(json.dumps({'step': step}))")
    monkeypatch.setattr(points, "point_command", lambda overrides, run, step, out: [sys.executable, "-c", writes,
                                                                                      f"checkpoint={step}", *overrides, str(out)])
    curves = CurveEvaluations(tmp_path, {"tg": ["suite=x"]}, load_every_s=0)
    assert [p[2]["step"] for p in curves.pending()] == [2, 4]
    curves.drain(poll_s=0.05)
    out = tmp_path / ".curves" / "tg" / "0_tg-lora"
    assert (out / "stage2-2" / "done.json").is_file() and not (out / "stage2-4" / "done.json").exists()
    assert json.loads((out / "stage2-2" / "curve_point.json").read_text()) == {"sweep": "tg", "run": "0_tg-lora",
                                                                                "stage": "stage2", "step": 2, "epoch": 1.0}
    assert curves.pending() == []  # 4 failed: left to a rerun of the study
    assert CurveEvaluations(tmp_path, {"tg": ["suite=x"]}).pending()[0][2]["step"] == 4  # a rerun retries it; 2 is done
    loads = [json.loads(x) for x in (tmp_path / "timings.jsonl").read_text().splitlines()]
    assert loads and all(r["event"] == "load" and len(r["loadavg"]) == 3 for r in loads)


def _point(root: Path, run: Path, step: int, rc5: float, seconds: float = 360.0) -> None:
    d = root / ".curves" / "tg" / run.name / f"stage2-{step}"
    d.mkdir(parents=True)
    (d / "curve_point.json").write_text(json.dumps({"step": step, "epoch": step / 150}))
    (d / "done.json").write_text("{}")
    (d / "results.json").write_text(json.dumps({"seconds": seconds, "results": [
        {"benchmark": "standard", "system": "bm25", "metrics": {"Rc@5": {"value": 0.99}}},
        {"benchmark": "standard", "system": f"smollm2_135m:stage2@{step}",
         "metrics": {"Rc@5": {"value": rc5, "lo": rc5 - 0.05, "hi": rc5 + 0.05}}}]}))


def test_the_rules_choose_the_first_point_over_the_threshold_within_the_time_rule_else_the_best_with_its_gap(tmp_path):
    run = _run(tmp_path)
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in (
        {"step": 75, "stage": "stage1", "train/stage1/train_runtime": 900.0},
        {"step": 450, "stage": "stage2", "train/stage2/train_runtime": 2700.0})) + "\n")
    _point(tmp_path, run, 150, 0.70)
    _point(tmp_path, run, 300, 0.86)
    (run / "eval").mkdir()
    (run / "eval" / "results.json").write_text(json.dumps({"seconds": 1200.0, "results": [
        {"benchmark": "standard", "system": "smollm2_135m:stage2", "metrics": {"Rc@5": {"value": 0.90, "lo": 0.86, "hi": 0.93}}}]}))
    (run / "done.json").write_text("{}")
    rule = RegimeRule(min_score={"tg": 0.85}, max_run_hours=1.0)
    pts = arm_points(tmp_path, "tg", rule)
    assert [(p["epoch"], p["est"]["value"]) for p in pts] == [(1.0, 0.70), (2.0, 0.86), (3.0, 0.90)]
    # Stage 1 900 s + two thirds of Stage 2's 2,700 s + the point's 360 s of evaluation = 0.85 h
    assert pts[1]["train_s"] == pytest.approx(2700.0) and (pts[1]["train_s"] + 360) / 3600 == pytest.approx(0.85)
    kind, best = choose(pts, 0.85, rule)
    assert kind == "meets" and best["epoch"] == 2.0  # the end of Stage 2 (3 ep, 1.25 h with its evaluation) is over the time rule
    kind, best = choose(pts, 0.95, rule)
    assert kind == "fallback" and best["epoch"] == 2.0
    text = regime_section(tmp_path, RegimeRule(min_score={"tg": 0.95}), registered=True)
    assert "**tg: fallback** — best within the budget Stage 1 1.0 ep, Stage 2 2.00 ep (0_tg-lora): Rc@5 86.0% [81.0, 91.0], " \
           "9.0 pp below 95%." in text
    assert "| tg | 0_tg-lora | 1.0 | 2.00 | 300 | 86.0% [81.0, 91.0] | 0.85 | no |" in text
    kind, best = choose(pts, 0.85, RegimeRule(min_score={"tg": 0.85}, min_tools=5000))
    assert kind == "over" and best["epoch"] == 3.0  # 1,200 tools: the catalog rule is unmet; the best point is said
    # the curve's plot, with the points drawn beside it (its _save call had lost the arguments the JSON needs)
    text = regime_section(tmp_path, rule, registered=True, plots_dir=tmp_path / "img", report=tmp_path / "report.md")
    assert "![Rc@5 against Stage-2 epochs](img/curves.png)" in text and (tmp_path / "img" / "curves.png").stat().st_size > 0
    drawn = json.loads((tmp_path / "img" / "curves.json").read_text())
    assert json.dumps(drawn).count('"value"') == 3 and "0.86" in json.dumps(drawn) and "epoch 3" in json.dumps(drawn)


def test_a_run_still_training_is_timed_from_its_logged_steps(tmp_path):
    run = _run(tmp_path)
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in (
        {"step": 10, "stage": "stage1", "time": 1000.0}, {"step": 70, "stage": "stage1", "time": 2000.0},
        {"step": 140, "stage": "stage2", "time": 3500.0}, {"step": 150, "stage": "stage2", "time": 3700.0},
        {"step": 160, "stage": "stage2", "time": 3900.0})) + "\n")
    _point(tmp_path, run, 150, 0.70, seconds=300.0)
    [p] = arm_points(tmp_path, "tg", RegimeRule(min_score={"tg": 0.85}))
    assert p["train_s"] == 2700.0 and p["epoch"] == 1.0  # from the first logged step to step 150's row
    text = regime_section(tmp_path, RegimeRule(min_score={"tg": 0.85}, max_run_hours=0.5), registered=True)
    assert "- **tg**: no point meets the time and catalog rules yet; the best measured, Stage 1 1.0 ep, Stage 2 1.00 ep " \
           "(0_tg-lora): Rc@5 70.0% [65.0, 75.0] (0.83 h)." in text


def test_the_regime_rule_is_registered_only_where_set_and_checked():
    plain = AnalysisPlan()
    assert "regime" not in plan_dict(plain)  # the plans registered before the field keep their hashes
    with_rule = AnalysisPlan(regime=RegimeRule(min_score={"tg": 0.85}))
    assert plan_dict(with_rule)["regime"]["min_score"] == {"tg": 0.85} and plan_hash(with_rule) != plan_hash(plain)
    with pytest.raises(ValueError, match=r"analysis.regime.min_score: arm -> a proportion"):
        AnalysisPlan(regime=RegimeRule(min_score={"tg": 85}))
    with pytest.raises(ValueError, match=r"curves: \['tgx'\] are not sweeps of this study"):
        StudyConfig(sweeps={"tg": []}, curves={"tgx": []})


def test_the_replication_plan_hashes_as_registered_and_the_pilot_registers_its_rules():
    from toolsense.study.config import register_configs
    from toolsense.utils.compose import compose
    from toolsense.utils.config import to_config

    register_configs()
    with tarfile.open(ROOT / "docs" / "reports" / "replication_results.tar.xz") as tar:
        reg = json.load(tar.extractfile("replication/registration.json"))
    replication = to_config(StudyConfig, compose("reproduce", ["study=replication"]))
    assert plan_hash(replication.analysis) == (reg["changes"][-1] if reg["changes"] else reg)["sha256"]
    pilot = to_config(StudyConfig, compose("reproduce", ["study=pilot"]))
    assert pilot.analysis.regime.min_score == {"tg": 0.85, "tg_h": 0.30} and pilot.analysis.regime.min_tools == 1000
    assert set(pilot.curves) == set(pilot.sweeps) == {"tg", "tg_h"} and pilot.workers == 1
