"""Issue 44, item 2: a job's signal (SIGTERM from scancel / a time limit, submitit's USR2) stops a
stage at the end of its step with a checkpoint; rerunning the same command resumes from it, and the
resumed weights equal an uninterrupted run's. The signal is sent to this process from a callback in
the middle of a step (os.kill), so it arrives exactly where a real one would, deterministically."""

from __future__ import annotations

import json
import os
import signal

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from tests.training.conftest import TINY, compose_train
from toolsense.training import run
from toolsense.training.preemption import Preempted, StopFlag, preemptible
from toolsense.training.stage import StageRunner


def _signal_at(monkeypatch, stage: str, step: int, signum: int = signal.SIGTERM) -> None:
    """Send ``signum`` to this process in the middle of ``stage``'s step ``step`` (after its backward pass)."""
    class Send(TrainerCallback):
        def __init__(self, name):
            self.name = name

        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            if self.name == stage and state.global_step + 1 == step:
                os.kill(os.getpid(), signum)

    setup = StageRunner.setup

    def with_signal(self):
        setup(self)
        self.trainer.add_callback(Send(self.name))

    monkeypatch.setattr(StageRunner, "setup", with_signal)


def _weights(folder):
    return load_file(str(folder / "model.safetensors"))


def _logged(run_dir, stage):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r["step"] for r in rows if f"train/{stage}/loss" in r]


ARGS = [*TINY, "experiment=tg", "stage1.max_steps=4", "stage2.max_steps=4"]  # save_steps=1000: no checkpoint but the signal's


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """One uninterrupted run of ARGS: (its folder, its summary)."""
    out = tmp_path_factory.mktemp("whole")
    return out, run(compose_train([*ARGS, f"output_dir={out}"]))


@pytest.mark.parametrize("stage", ["stage1", "stage2"])
def test_sigterm_saves_a_checkpoint_and_the_rerun_equals_an_uninterrupted_run(tmp_path, monkeypatch, whole, stage):
    whole_dir, summary = whole
    cut = tmp_path / "cut"
    with monkeypatch.context() as m:
        _signal_at(m, stage, 2)
        with pytest.raises(Preempted, match=rf"stopped on SIGTERM: {stage} saved .*checkpoint-2; rerun the same command"):
            run(compose_train([*ARGS, f"output_dir={cut}"]))
    assert (cut / "checkpoints" / stage / "checkpoint-2" / "trainer_state.json").is_file()
    assert not (cut / stage).exists()  # the stage is not marked done: the rerun trains its last 2 steps
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back

    resumed = run(compose_train([*ARGS, f"output_dir={cut}"]))
    assert resumed[stage]["resumed_from"].endswith("checkpoint-2") and resumed[stage]["global_step"] == 4
    assert _logged(cut, stage) == _logged(whole_dir, stage) == [1, 2, 3, 4]  # each step counted once
    assert resumed[stage]["train_loss"] == pytest.approx(summary[stage]["train_loss"], rel=1e-6)
    a, b = _weights(whole_dir / "stage2"), _weights(cut / "stage2")
    assert a.keys() == b.keys()
    diff = max((a[k].float() - b[k].float()).abs().max().item() for k in a)
    print(f"SIGTERM in {stage}: max |weight difference| resumed vs uninterrupted: {diff:.3g} over {len(a)} tensors")
    assert diff <= 1e-6, f"resumed weights differ from an uninterrupted run's by {diff}"
    assert any(not torch.equal(a[k], _weights(whole_dir / "stage1")[k]) for k in a)  # Stage 2 did train


def test_ranks_stop_on_the_strongest_signal_and_handlers_come_back():
    """USR2 (requeue) outranks SIGTERM; outside the block the previous handlers are back."""
    before = signal.getsignal(signal.SIGUSR2)
    with preemptible() as flag:
        assert flag.agree() == 0
        os.kill(os.getpid(), signal.SIGUSR2)
        os.kill(os.getpid(), signal.SIGTERM)
        assert flag.agree() == signal.SIGUSR2
        with pytest.raises(Preempted, match="stopped on SIGUSR2: x saved"):
            flag.hand_over("x saved")  # no submitit handler here: the job ends naming what was saved
    assert signal.getsignal(signal.SIGUSR2) is before
    assert StopFlag().agree() == 0
