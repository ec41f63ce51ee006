"""Under LoRA exactly the adapters and the virtual-token rows train (tied head included), even
with weight decay on; merging keeps the model tied."""

from __future__ import annotations

import pytest
import torch

from tests.training.conftest import ASSETS
from toolsense.catalog import load_catalog
from toolsense.data.examples import to_dataset
from toolsense.data.memorization import MemorizationConfig, build_memorization_examples
from toolsense.index import add_index_tokens, build_index
from toolsense.training.config import StageSchedule, TrainerConfig, TuningConfig
from toolsense.training.trainer import ToolsenseSFTTrainer, sft_config
from toolsense.training.tuning import prepare_trainable


def test_exactly_adapters_and_virtual_rows_change(tiny_model, tmp_path):
    model, tok = tiny_model
    cat = load_catalog(ASSETS / "tools.jsonl")
    index = build_index(cat, "flat")
    n_old = len(tok)
    ids = add_index_tokens(index, model, tok)
    data = to_dataset(build_memorization_examples(cat, index, MemorizationConfig()), tok, 256)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    tr = prepare_trainable(model, TuningConfig(r=8, alpha=16), ids)
    args = sft_config(TrainerConfig(effective_batch=9, per_device_batch=9, weight_decay=0.1, use_cpu=True, save_steps=100),
                      StageSchedule(max_steps=2, learning_rate=1e-2, warmup_ratio=0.0), tmp_path, "t")
    ToolsenseSFTTrainer(model=tr.model, args=args, train_dataset=data, processing_class=tok).train()

    after = {n.replace("base_model.model.", "").replace(".base_layer", ""): p for n, p in tr.model.named_parameters()}
    lora = [n for n in after if "lora_" in n]
    assert lora and all(not torch.equal(after[n], torch.zeros_like(after[n])) for n in lora if "lora_B" in n)
    emb = "model.embed_tokens.weight"
    assert torch.equal(after[emb][:n_old], before[emb][:n_old])  # base vocabulary rows: bit-identical
    assert (after[emb][n_old:] - before[emb][n_old:]).abs().amax(dim=1).gt(1e-4).all()  # all 9 tools seen
    for n, p in before.items():
        if n != emb:
            assert torch.equal(after[n], p), f"{n} changed"
    merged = tr.merged()
    assert merged.get_output_embeddings().weight is merged.get_input_embeddings().weight
    assert not any("lora_" in n for n, _ in merged.named_parameters())


def test_embedding_lr_scale_gives_virtual_rows_a_larger_first_step(tiny_model_dir, tmp_path):
    """Adam's first update moves every parameter with a gradient by ~lr (bias-corrected
    m/sqrt(v) = ±1), so the rows' step is ~lr x scale while the adapters' stays ~lr."""
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    steps = {}
    for scale in (1.0, 20.0):
        model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
        cat = load_catalog(ASSETS / "tools.jsonl")
        index = build_index(cat, "flat")
        n_old = len(tok)
        ids = add_index_tokens(index, model, tok)
        data = to_dataset(build_memorization_examples(cat, index, MemorizationConfig()), tok, 256)
        emb_before = model.get_input_embeddings().weight.detach()[n_old:].clone()
        tr = prepare_trainable(model, TuningConfig(r=8, alpha=16, embedding_lr_scale=scale), ids)
        args = sft_config(TrainerConfig(effective_batch=9, per_device_batch=9, use_cpu=True, save_steps=100, max_grad_norm=0.0),
                          StageSchedule(max_steps=1, learning_rate=1e-3, warmup_ratio=0.0, lr_scheduler="constant"), tmp_path / str(scale), "t")
        trainer = ToolsenseSFTTrainer(model=tr.model, args=args, train_dataset=data, processing_class=tok, embedding_lr_scale=scale)
        trainer.train()
        lrs = sorted(g["lr"] for g in trainer.optimizer.param_groups)
        steps[scale] = (model.get_input_embeddings().weight.detach()[n_old:] - emb_before).abs().amax().item()
        assert lrs[-1] == pytest.approx(1e-3 * scale)
    assert steps[1.0] == pytest.approx(1e-3, rel=0.05)
    assert steps[20.0] == pytest.approx(2e-2, rel=0.05)
