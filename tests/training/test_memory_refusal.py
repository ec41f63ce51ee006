"""Issue 44, item 3: a stage that cannot fit the job's GPUs is refused before the model loads, naming the
per-GPU numbers and what fits instead: an 8B full fine-tuning under ZeRO-3 on one rank (what every Slurm
job was before its tasks became ranks) is 152.2 GiB per GPU at this test's batch, 77.4 GiB over 2 ranks. A model whose config
cannot be read is refused on a GPU rather than trained without a plan. Checked on CPU: the 80 GiB GPU is
the plan's input (``device_memory``), the model a Llama-3-8B config.json without weights."""

from __future__ import annotations

import logging

import pytest

from tests.training.conftest import TINY, compose_train
from tests.training.test_memory_plan import _llama8b
from toolsense.training import runner, to_train_config
from toolsense.training.runner import prepare

H100 = 80 * 2**30


def _cfg(tmp_path, *extra):
    folder = tmp_path / "llama8b"
    if not folder.exists():
        _llama8b().save_pretrained(folder)  # config.json only: the plan reads no weights
    return to_train_config(compose_train([*TINY, "trainer=ds_zero3", "tuning=full", "trainer.effective_batch=8",
                                          f"model.name_or_path={folder}", f"output_dir={tmp_path / 'run'}", *extra]))


@pytest.fixture
def gpu80(monkeypatch):
    monkeypatch.setattr(runner, "device_memory", lambda: H100)
    monkeypatch.setattr(runner, "use_bf16", lambda trainer: True)


def test_an_8b_full_fine_tuning_on_one_rank_is_refused_naming_what_fits(tmp_path, gpu80, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ValueError) as e:
        prepare(_cfg(tmp_path))
    msg = str(e.value)
    assert "memory plan per device (zero3; 8.03B parameters" in msg and "total 152.2" in msg and "on 1 rank(s)" in msg, msg
    assert "over this GPU's 80.0 GiB" in msg
    # the fewest ZeRO-3 ranks that fit (weights, gradients and optimizer halve; activations stay), then LoRA
    assert "Fits: trainer=ds_zero3 over 2 GPU(s) (launcher=slurm_gpu, or hydra.launcher.tasks_per_node=2 " \
           "hydra.launcher.nodes=1): 77.4 GiB each; tuning=lora on 1 rank(s): 38.0 GiB each" in msg, msg
    assert not (tmp_path / "run").exists()  # refused before anything is written or loaded

    monkeypatch.setenv("WORLD_SIZE", "8")  # the same stage over 8 ranks fits: nothing refused
    assert prepare(_cfg(tmp_path)).catalog


def test_too_few_ranks_under_zero2_points_at_zero3(tmp_path, gpu80, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match=r"on 2 rank\(s\).*Fits: trainer=ds_zero3 over \d+ GPU\(s\)"):
        prepare(_cfg(tmp_path, "trainer=ds_zero2"))


def test_an_unreadable_model_config_is_not_skipped_silently(tmp_path, gpu80, monkeypatch, caplog):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ValueError, match=r"model.name_or_path='.*no-such-model': its config.json cannot be read, so the memory plan"):
        prepare(_cfg(tmp_path, f"model.name_or_path={missing}"))
    monkeypatch.setattr(runner, "device_memory", lambda: None)  # a CPU: nothing to refuse, but said at warning level
    with caplog.at_level(logging.WARNING):
        prepare(_cfg(tmp_path, f"model.name_or_path={missing}"))
    assert any("no memory plan for" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
