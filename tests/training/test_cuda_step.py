"""Training on a CUDA device (``pytest -m gpu``; skipped with the reason elsewhere): train.py
with trainer=gpu and LoRA loads the frozen base in bf16 and keeps what trains (adapters, embedding
rows) in fp32, so the virtual-token rows move by steps bf16 could not represent; the merged stage
is saved in the configured dtype (``model.dtype=auto``: bf16), as under ZeRO-2. Not yet run on a
GPU: no CUDA device was available when this version was written (docs/guides/gpu.md)."""

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
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled",
           "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}
    cmd = [sys.executable, str(ROOT / "train.py"), *TINY, "experiment=tg", "trainer=gpu", "trainer.precision=bf16", "model.dtype=auto",
           "trainer.effective_batch=4", "trainer.per_device_batch=4", "stage1.max_steps=2", "stage2.enabled=false",
           "trainer.save_steps=2", "stage1.learning_rate=2e-5", f"output_dir={run_dir}"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "stage1: memory plan per device (ddp;" in out.stdout + out.stderr
    base, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="bfloat16"))  # where the stage started
    n_old = len(tok)
    index = ToolIndex.load(run_dir / "index.json", load_catalog(ROOT / "tests" / "assets" / "training" / "tools.jsonl"))
    add_index_tokens(index, base, tok)
    trained, _ = load_model_and_tokenizer(ModelConfig(str(run_dir / "stage1"), dtype="auto"))
    assert {p.dtype for p in trained.parameters()} == {torch.bfloat16}  # merged, then saved in the configured dtype
    rows = torch.load(run_dir / "checkpoints" / "stage1" / "checkpoint-2" / "embedding_rows.pt", map_location="cpu")["rows.0"]
    assert rows.dtype == torch.float32  # trained in fp32 over the bf16 base
    start = base.get_input_embeddings().weight[n_old:len(tok)].float()
    step = (rows[n_old:len(tok)] - start).abs()
    assert 0 < step.amax() < 1e-3  # lr 2e-5 moved the rows ...
    assert (step < start.abs() * 2**-9).float().mean() > 0.5  # ... by steps mostly under half bf16's spacing: a bf16 weight loses them
