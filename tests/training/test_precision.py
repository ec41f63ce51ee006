"""Training precision and the multi-GPU settings a CPU can check: fp32 master weights without
DeepSpeed (bf16 weights lose AdamW's small steps), the embedding_lr_scale rule under DeepSpeed,
and the DDP settings of the SFTConfig."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from toolsense.models import ModelConfig, load_model_and_tokenizer
from toolsense.training.config import StageSchedule, TrainerConfig
from toolsense.training.trainer import DDP_TIMEOUT_S, ToolsenseSFTTrainer, master_weights, sft_config

ZERO2 = {"zero_optimization": {"stage": 2}, "bf16": {"enabled": "auto"}}


def test_bf16_weights_lose_adamw_steps_that_fp32_master_weights_keep():
    """Why the rule exists: one AdamW step at lr 2e-5 moves every fp32 weight and no bf16 one."""
    moved = {}
    for dtype in (torch.float32, torch.bfloat16):
        w = torch.nn.Parameter(torch.ones(64, dtype=dtype))
        opt = torch.optim.AdamW([w], lr=2e-5, weight_decay=0.0)
        w.grad = torch.full_like(w, 0.3)
        opt.step()
        moved[dtype] = int((w.detach() != 1).sum())
    assert moved == {torch.float32: 64, torch.bfloat16: 0}


def test_master_weights_loads_fp32_where_auto_would_pick_bf16(monkeypatch):
    """On a bf16 GPU model.dtype=auto resolves to bf16; without DeepSpeed a stage loads fp32
    instead (the Trainer's bf16 autocasts the matmuls); DeepSpeed keeps its own fp32 copy."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    auto = ModelConfig("tiny_random")
    bare, _ = load_model_and_tokenizer(auto)
    assert next(bare.parameters()).dtype == torch.bfloat16  # what trainer=gpu trained before
    model, _ = load_model_and_tokenizer(master_weights(auto, TrainerConfig(precision="bf16")))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert str(master_weights(auto, TrainerConfig(deepspeed=ZERO2)).dtype) == "auto"
    assert str(master_weights(ModelConfig("tiny_random", dtype="float32"), TrainerConfig()).dtype) == "float32"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_weights_without_deepspeed_are_refused(dtype):
    with pytest.raises(ValueError, match=f"model.dtype={dtype} without DeepSpeed: AdamW would update {dtype} weights"):
        master_weights(ModelConfig("tiny_random", dtype=dtype), TrainerConfig())
    assert str(master_weights(ModelConfig("tiny_random", dtype=dtype), TrainerConfig(deepspeed=ZERO2)).dtype) == dtype


def test_embedding_lr_scale_with_a_deepspeed_optimizer_section_is_refused():
    args = SimpleNamespace(deepspeed={**ZERO2, "optimizer": {"type": "AdamW", "params": {"lr": 2e-5}}})
    with pytest.raises(ValueError, match="tuning.embedding_lr_scale=2.5 needs the Trainer's optimizer"):
        ToolsenseSFTTrainer(model=None, args=args, embedding_lr_scale=2.5)


@pytest.mark.parametrize("method,unused", [("lora", False), ("full", None)])
def test_sft_config_ddp_settings(tmp_path, method, unused):
    args = sft_config(TrainerConfig(effective_batch=2, per_device_batch=2, use_cpu=True), StageSchedule(max_steps=1),
                      tmp_path, "t", tuning_method=method)
    assert args.ddp_timeout == DDP_TIMEOUT_S == 4 * 3600  # not Accelerate's 30 minutes
    assert args.ddp_find_unused_parameters is unused
