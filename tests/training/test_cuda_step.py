"""Training on a CUDA device (``pytest -m gpu``; skipped with the reason elsewhere): train.py
with trainer=gpu runs bf16 steps over fp32 master weights (model.dtype=auto would load bf16),
and the virtual-token rows move by more than bf16 could represent."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from tests.training.conftest import ROOT, TINY

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_one_bf16_stage_on_the_gpu(tmp_path):
    from toolsense.catalog import load_catalog
    from toolsense.index import ToolIndex, add_index_tokens
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    run_dir = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}
    cmd = [sys.executable, str(ROOT / "train.py"), *TINY, "experiment=tg", "trainer=gpu", "trainer.precision=bf16",
           "trainer.effective_batch=4", "trainer.per_device_batch=4", "stage1.max_steps=2", "stage2.enabled=false",
           "stage1.learning_rate=2e-5", f"output_dir={run_dir}"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    base, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    n_old = len(tok)
    index = ToolIndex.load(run_dir / "index.json", load_catalog(ROOT / "tests" / "assets" / "training" / "tools.jsonl"))
    add_index_tokens(index, base, tok)
    trained, _ = load_model_and_tokenizer(ModelConfig(str(run_dir / "stage1"), dtype="float32"))
    assert next(trained.parameters()).dtype == torch.float32  # saved from fp32 master weights
    step = (trained.get_input_embeddings().weight[n_old:len(tok)] - base.get_input_embeddings().weight[n_old:len(tok)]).abs()
    assert step.amax() > 0 and step.amax() < 1e-3  # lr 2e-5 moved the rows: in bf16 most such steps round to nothing
