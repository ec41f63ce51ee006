"""trainer=gpu at 8B, checked on CPU from config numbers and tiny models: the memory plan of a
Llama-3-8B-shaped stage pinned by hand, full fine-tuning past 3B refused on plain DDP before
anything is written, LoRA's frozen base in bf16 with what trains in fp32, one merge on every back
end, and a multimodal Gemma-3's vision tower left without adapters."""

from __future__ import annotations

import pytest
import torch

from tests.training.conftest import TINY, compose_train
from toolsense.models import ModelConfig, load_model_and_tokenizer
from toolsense.training.config import TrainerConfig, TuningConfig
from toolsense.training.memory import GIB, Shape, memory_plan, refuse_unfit

TOOLBENCH_TOKENS = 46_984


def _llama8b(vocab: int = 128_256):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=vocab, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                       num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False)


def test_the_plan_of_an_8b_lora_stage_on_ddp():
    """Llama-3-8B has 8,030,261,248 parameters; with ToolBench's tokens the vocabulary is 175,240
    rows, padded to 175,296. LoRA r=64 on the seven projections: 32 x 64 x (2 x 8192 + 2 x 5120
    + 3 x 18432) = 167,772,160 adapters, beside both untied 175,296 x 4096 matrices."""
    assert Shape.from_config(_llama8b()).params == 8_030_261_248
    shape = Shape.from_config(_llama8b(), TOOLBENCH_TOKENS)
    assert shape.rows == 175_296 and shape.params == 8_415_612_928 and shape.lora_params(64) == 167_772_160
    gpu = TrainerConfig(per_device_batch=8, max_length=1024, gradient_checkpointing=True)
    plan = memory_plan(shape, TuningConfig(), gpu)
    trainable = 167_772_160 + 2 * 175_296 * 4096
    assert plan.trainable == trainable
    # frozen bf16, trainable fp32, and autocast's bf16 copies of the adapters and the (untied) LM head
    assert plan.weights == (8_415_612_928 - trainable) * 2 + trainable * 4 + (167_772_160 + 175_296 * 4096) * 2
    assert (plan.gradients, plan.optimizer) == (trainable * 4, trainable * 8)
    tokens = 8 * 1024  # checkpointed: each layer's fp32 input, one layer recomputed, the labelled positions' logits
    assert plan.activations == 32 * tokens * 4096 * 4 + tokens * (12 * 4096 + 5 * 14336) * 2 + 8 * 128 * 175_296 * 12
    assert round(plan.total / GIB, 1) == 46.1 and "total 46.1" in plan.text()
    # what trainer=gpu did before: the frozen base in fp32, no checkpointing, 16 examples per device (bf16=False:
    # without autocast's copies, so a lower bound)
    before = memory_plan(shape, TuningConfig(), TrainerConfig(per_device_batch=16, gradient_checkpointing=False), bf16=False)
    assert before.weights == 8_415_612_928 * 4 and round(before.total / GIB) == 171  # more than an H200 holds
    # ZeRO-3 full fine-tuning over 8 GPUs: everything sharded
    z3 = memory_plan(shape, TuningConfig(method="full"), TrainerConfig(deepspeed={"zero_optimization": {"stage": 3}}), world_size=8)
    assert z3.backend == "zero3" and z3.weights == 8_415_612_928 * 2 // 8 and z3.optimizer == 8_415_612_928 * 12 // 8


def test_full_fine_tuning_of_8b_on_plain_ddp_is_refused_before_anything_is_written(tmp_path):
    from toolsense.training import to_train_config
    from toolsense.training.runner import prepare

    shape = Shape.from_config(_llama8b())
    with pytest.raises(ValueError, match=r"tuning=full of a 8\.0B-parameter model without DeepSpeed .* 120 GiB each .* "
                                         r"Use trainer=ds_zero3 \(conf/trainer/ds_zero3\.yaml"):
        refuse_unfit(shape, TuningConfig(method="full"), TrainerConfig())
    refuse_unfit(shape, TuningConfig(), TrainerConfig())  # LoRA fits
    refuse_unfit(shape, TuningConfig(method="full"), TrainerConfig(deepspeed={"zero_optimization": {"stage": 3}}))
    folder = tmp_path / "llama8b"
    _llama8b().save_pretrained(folder)  # config.json only: the refusal reads no weights
    run = tmp_path / "run"
    cfg = to_train_config(compose_train([*TINY, "trainer=gpu", "tuning=full", f"model.name_or_path={folder}", f"output_dir={run}"]))
    with pytest.raises(ValueError, match=r"conf/trainer/ds_zero3\.yaml"):
        prepare(cfg)
    assert not run.exists()


@pytest.fixture
def bf16_gpu(monkeypatch):
    """What the stage sees on a bf16 GPU (the weights stay on the CPU)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)


def _lora(bf16: bool):
    from toolsense.training.trainer import master_weights
    from toolsense.training.tuning import prepare_trainable

    cfg = master_weights(ModelConfig("tiny_random"), TrainerConfig(precision="bf16" if bf16 else "fp32"), "lora")
    model, tok = load_model_and_tokenizer(cfg)
    return prepare_trainable(model, TuningConfig(r=4, alpha=8), [len(tok) - 1], upcast=True), cfg


def test_lora_without_deepspeed_keeps_the_frozen_base_in_bf16_and_what_trains_in_fp32(bf16_gpu):
    from toolsense.utils.modeling import embeddings_tied

    trainable, cfg = _lora(bf16=True)
    assert str(cfg.dtype) == "bfloat16"
    named = dict(trainable.model.named_parameters())
    assert {p.dtype for p in named.values() if not p.requires_grad} == {torch.bfloat16}
    assert {p.dtype for p in named.values() if p.requires_grad} == {torch.float32}
    assert any("lora_A" in n for n in named) and trainable.row_params[0].dtype == torch.float32
    assert embeddings_tied(trainable.model.get_base_model())
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the Trainer's bf16 on a GPU
        loss = trainable.model(input_ids=ids, labels=ids).loss
    loss.backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in named.values() if p.requires_grad)
    assert all(p.grad is None for p in named.values() if not p.requires_grad)


def test_lora_merges_alike_from_ddp_fp32_weights_and_from_deepspeeds_fp32_master(bf16_gpu):
    """DDP holds the trained fp32 values in the module; ZeRO-2 holds a bf16 rounding there and the
    fp32 values in its optimizer (reached through ``safe_get_full_fp32_param``, simulated here
    with DeepSpeed's own attributes). Both merge to the same bf16 weights."""
    torch.manual_seed(0)
    ddp, _ = _lora(bf16=True)
    zero, _ = _lora(bf16=True)
    zero.model.load_state_dict(ddp.model.state_dict())
    with torch.no_grad():
        for (name, p), q in zip(ddp.model.named_parameters(), zero.model.parameters()):
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 1e-2)  # "trained": adapters (lora_B off zero) and embedding rows
                q.data = p.detach().to(torch.bfloat16)  # DeepSpeed's module copy
                q._hp_mapping, q.get_full_hp_param = True, (lambda v=p.detach().clone(): v)
    a, b = ddp.merged(torch.bfloat16), zero.merged(torch.bfloat16)
    sa, sb = a.state_dict(), b.state_dict()
    assert {t.dtype for t in sa.values()} == {torch.bfloat16}
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


def test_all_linear_adapts_the_language_model_of_a_multimodal_gemma3_only():
    from peft.tuners.tuners_utils import _maybe_include_all_linear_layers
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    from toolsense.training.tuning import lora_targets, prepare_trainable

    cfg = Gemma3Config(
        text_config={"vocab_size": 300, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "num_key_value_heads": 1, "head_dim": 16},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 28, "patch_size": 14}, mm_tokens_per_image=4)
    model = Gemma3ForConditionalGeneration(cfg)
    targets = lora_targets(model, "all-linear")
    assert len(targets) == 2 * 7 and all(".language_model.layers." in t for t in targets)
    assert any("vision_tower" in n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear))  # PEFT's all-linear took them
    trainable = prepare_trainable(model, TuningConfig(r=4, alpha=8), [299])
    adapted = {n.split(".lora_A")[0] for n, _ in trainable.model.named_parameters() if ".lora_A." in n}
    assert len(adapted) == 14 and not any("vision_tower" in n or "multi_modal" in n for n in adapted)
    # a text-only model: the same layers as PEFT's own all-linear
    text, _ = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    from peft import LoraConfig

    peft_set = _maybe_include_all_linear_layers(LoraConfig(target_modules="all-linear", task_type="CAUSAL_LM"), text).target_modules
    assert set(lora_targets(text, "all-linear")) == set(peft_set) and lora_targets(text, "q_proj") == "q_proj"
