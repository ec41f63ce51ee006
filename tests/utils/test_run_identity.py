"""A run's identity is its resolved settings: a run finished by an older version (tests/assets/runs/
made_at_42b152e: config.yaml and done.json of a tiny_random run that train.py wrote at 42b152e, with
``evaluate.overrides`` strings) is still finished under today's typed evaluate section, and a field that
a later version adds is no difference at its default and a difference otherwise (issue 47 item 3)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolsense.pipeline import evaluation_plan, legacy_identity, run_identity
from toolsense.training import TrainConfig, register_configs
from toolsense.utils.compose import compose
from toolsense.utils.config import as_plain, to_config
from toolsense.utils.identity import at_default
from toolsense.utils.rundir import RunDir

NOT_TRAINING = ("output_dir", "evaluate", "logger")  # training/runner.py's (importing it loads the trainer)

ROOT = Path(__file__).resolve().parents[2]
OLD_RUN = ROOT / "tests" / "assets" / "runs" / "made_at_42b152e"
# The command that made OLD_RUN at 42b152e, its evaluation written as today's typed section (was:
# evaluate.overrides=[benchmarks.standard.limit=4,...,~baselines.dense,decoding=beam10,metrics.resamples=100,
# probe.modes=[token]] evaluate.stage_overrides.stage1=[~benchmarks.mcq,~benchmarks.qa,~baselines.bm25]).
TRAIN = ["model=tiny_random", "index.branching=3", "catalog.path=tests/assets/training/tools.jsonl", "stage2=jsonl",
         "stage2.sources.0.path=tests/assets/training/queries.jsonl", "stage2.sources.0.split=null",
         "memorization.mcts_negatives=3", "trainer.effective_batch=4", "trainer.per_device_batch=4",
         "trainer.logging_steps=1", "trainer.save_steps=1000", "stage1.max_steps=2", "stage2.max_steps=2", "experiment=tg"]
EVALUATE = ["evaluate.suite=demo", "evaluate.stages=[stage1,stage2]", "evaluate.drift=true", "evaluate.decoding=beam10",
            *(f"evaluate.settings.benchmarks.{b}.limit=4" for b in ("standard", "realistic", "mcq", "qa")),
            "evaluate.skip=[dense]", "evaluate.settings.metrics.resamples=100", "evaluate.settings.probe.modes=[token]",
            "evaluate.stage1.skip=[mcq,qa,bm25]"]


def _identity(run: Path, overrides: list[str]):
    register_configs()
    cfg = to_config(TrainConfig, compose("train", [*overrides, f"output_dir={run}"]))
    return run_identity(cfg, evaluation_plan(cfg, run))


@pytest.fixture
def old_run(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(ROOT)  # the run's catalog and queries are paths relative to the checkout, as it was made
    run = tmp_path / "old_run"
    shutil.copytree(OLD_RUN, run)
    return run


def test_a_run_finished_at_42b152e_is_finished_under_the_typed_evaluate_section(old_run):
    rd = RunDir(old_run)
    assert "identity" not in rd.done()  # the old format: the sha256 of the composed config alone
    identity, defaults = _identity(old_run, [*TRAIN, *EVALUATE])
    legacy = lambda record: legacy_identity(rd, record)  # noqa: E731
    assert rd.finished(identity, defaults, legacy=legacy)
    for other in (["evaluate.settings.benchmarks.standard.limit=5"], ["evaluate.stage1.skip=[mcq,qa]"],
                  ["evaluate.decoding=null"], ["stage1.max_steps=3"]):  # another evaluation or training: not finished
        assert not rd.finished(*_identity(old_run, [*TRAIN, *EVALUATE, *other]), legacy=legacy), other
    saved = rd.config_path.read_text()
    rd.config_path.write_text(saved.replace("max_steps: 2", "max_steps: 3", 1))  # config.yaml no longer the one hashed
    assert not rd.finished(identity, defaults, legacy=legacy)


def test_a_new_field_is_no_difference_at_its_default_only(tmp_path):
    """What a field added mid-study looks like to done.json and config.yaml written before it: absent.
    At its default the run is finished (and resumes training); at another value it is not (refused)."""
    run = tmp_path / "run"
    identity, defaults = _identity(run, [*TRAIN, *EVALUATE])
    rd = RunDir(run)
    rd.mark_finished(identity)
    record = json.loads(rd.done_path.read_text())
    del record["identity"]["train"]["trainer"]["dataloader_num_workers"]  # "added" after the run finished
    del record["identity"]["evaluations"][0]["decoding"]["length_penalty"]
    rd.done_path.write_text(json.dumps(record))
    assert rd.finished(identity, defaults) and not rd.finished(identity)
    assert not rd.finished(*_identity(run, [*TRAIN, *EVALUATE, "trainer.dataloader_num_workers=2"]))
    assert not rd.finished(*_identity(run, [*TRAIN, *EVALUATE, "evaluate.settings.decoding.length_penalty=0.5"]))

    before = json.loads(json.dumps(identity["train"]))
    del before["trainer"]["dataloader_num_workers"]
    rd.write_config(before, ignore=NOT_TRAINING)
    (run / "metrics.jsonl").write_text("{}\n")  # something trained under it
    for value, resumes in ((0, True), (2, False)):
        cfg = to_config(TrainConfig, compose("train", [*TRAIN, f"trainer.dataloader_num_workers={value}"]))
        if resumes:
            rd.write_config(as_plain(cfg), ignore=NOT_TRAINING, defaults=at_default(cfg))
        else:
            with pytest.raises(ValueError, match=r"\(trainer.dataloader_num_workers differ\); it has trained metrics.jsonl"):
                rd.write_config(as_plain(cfg), ignore=NOT_TRAINING, defaults=at_default(cfg))


def test_train_py_skips_the_old_run(old_run):
    """The user's command, today's train.py on the run folder 42b152e finished: nothing is trained or evaluated."""
    out = subprocess.run([sys.executable, str(ROOT / "train.py"), *TRAIN, *EVALUATE, f"output_dir={old_run}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "trained and evaluated earlier under this config" in out.stdout + out.stderr
    assert not (old_run / "stage1").exists() and not (old_run / "eval").exists()
