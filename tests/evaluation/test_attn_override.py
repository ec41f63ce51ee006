"""``evaluate.py run=... model.attn_implementation=...`` replaces the run's attention
implementation: a run trained under flash attention (``padding_free``) saves it in its model
section, and a machine without flash-attn (or the beam search, which needs 4D masks) evaluates
it under sdpa instead."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
from omegaconf import OmegaConf

from toolsense.evaluation.context import load_run


@pytest.fixture
def fa2_run(tiny_run, tmp_path):
    run = tmp_path / "fa2_run"
    shutil.copytree(tiny_run, run)
    cfg = OmegaConf.load(run / "config.yaml")
    cfg.model.attn_implementation = "flash_attention_2"
    OmegaConf.save(cfg, run / "config.yaml")
    return run


@pytest.mark.skipif(importlib.util.find_spec("flash_attn") is not None, reason="flash-attn is installed: the run loads as saved")
def test_a_flash_attention_run_loads_under_the_given_implementation(fa2_run):
    with pytest.raises(ImportError, match="FlashAttention2"):  # the run's own setting cannot load here
        load_run(fa2_run, "stage2", "cpu")
    for impl in ("sdpa", "eager"):
        ev = load_run(fa2_run, "stage2", "cpu", attn_implementation=impl)
        assert ev.model.config._attn_implementation == impl


def test_the_override_reaches_load_run_from_the_command_line(monkeypatch, tiny_run):
    import inspect

    import toolsense.evaluation.runner as runner
    from tests.evaluation.test_evaluate_config import _compose
    from toolsense.evaluation.config import EvaluateConfig
    from toolsense.utils.config import to_config

    seen = {}
    bind = inspect.signature(runner.load_run).bind  # by name: load_run's later parameters (checkpoint) move positions
    monkeypatch.setattr(runner, "load_run", lambda *a, **kw: seen.setdefault("args", bind(*a, **kw).arguments))
    runner.load_model_under_test(to_config(EvaluateConfig, _compose([f"run={tiny_run}", "model.attn_implementation=eager"])))
    assert seen["args"]["run_dir"] == str(tiny_run)
    assert seen["args"]["attn_implementation"] == "eager"
