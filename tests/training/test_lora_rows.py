"""Under LoRA the adapters and the embedding rows train (tied head included): every row with
tuning.embedding_rows=all (the paper's trainable embeddings), exactly the virtual-token rows with
virtual, even with weight decay on; merging keeps the model tied; a stage folder and a checkpoint
hold the trained rows."""

from __future__ import annotations

import pytest
import torch

from tests.training.conftest import ASSETS, TINY, compose_train
from toolsense.catalog import load_catalog
from toolsense.data.examples import to_dataset
from toolsense.data.memorization import MemorizationConfig, build_memorization_examples
from toolsense.index import add_index_tokens, build_index
from toolsense.training.config import StageSchedule, TrainerConfig, TuningConfig
from toolsense.training.trainer import ToolsenseSFTTrainer, sft_config
from toolsense.training.tuning import prepare_trainable


def _lora_steps(model, tok, tmp_path, embedding_rows: str, steps: int = 2):
    """``steps`` LoRA steps (lr 1e-2, weight decay 0.1) on the 9 tools' desc2tok examples; returns
    the Trainable, the base vocabulary size and the parameters before training."""
    cat = load_catalog(ASSETS / "tools.jsonl")
    index = build_index(cat, "flat")
    n_old = len(tok)
    ids = add_index_tokens(index, model, tok)
    data = to_dataset(build_memorization_examples(cat, index, MemorizationConfig()), tok, 256)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    tr = prepare_trainable(model, TuningConfig(r=8, alpha=16, embedding_rows=embedding_rows), ids)
    args = sft_config(TrainerConfig(effective_batch=9, per_device_batch=9, weight_decay=0.1, use_cpu=True, save_steps=100),
                      StageSchedule(max_steps=steps, learning_rate=1e-2, warmup_ratio=0.0), tmp_path, "t")
    ToolsenseSFTTrainer(model=tr.model, args=args, train_dataset=data, processing_class=tok).train()
    return tr, n_old, before


def _unwrapped(tr):
    return {n.replace("base_model.model.", "").replace(".base_layer", ""): p for n, p in tr.model.named_parameters()}


EMB = "model.embed_tokens.weight"


def test_virtual_rows_only_exactly_adapters_and_virtual_rows_change(tiny_model, tmp_path):
    model, tok = tiny_model
    tr, n_old, before = _lora_steps(model, tok, tmp_path, "virtual")
    after = _unwrapped(tr)
    lora = [n for n in after if "lora_" in n]
    assert lora and all(not torch.equal(after[n], torch.zeros_like(after[n])) for n in lora if "lora_B" in n)
    assert torch.equal(after[EMB][:n_old], before[EMB][:n_old])  # base vocabulary rows: bit-identical
    n = len(tok)  # rows past it pad the matrix to a multiple of 64 (no token, never trained under virtual)
    assert (after[EMB][n_old:n] - before[EMB][n_old:n]).abs().amax(dim=1).gt(1e-4).all()  # all 9 tools seen
    for n, p in before.items():
        if n != EMB:
            assert torch.equal(after[n], p), f"{n} changed"
    merged = tr.merged()
    assert merged.get_output_embeddings().weight is merged.get_input_embeddings().weight
    assert not any("lora_" in n for n, _ in merged.named_parameters())


def test_all_rows_base_vocabulary_trains_and_the_tie_holds(tiny_model, tmp_path):
    """One LoRA step with embedding_rows=all: base rows move too (the tied head's softmax gradient
    reaches every row), yet less than the virtual rows, relative to their norm; nothing else but
    the adapters moves, and input and output embeddings stay one tensor through training and merge."""
    from toolsense.evaluation.drift import relative_drift

    model, tok = tiny_model
    tr, n_old, before = _lora_steps(model, tok, tmp_path, "all", steps=1)
    after = _unwrapped(tr)
    base_moved = (after[EMB][:n_old] - before[EMB][:n_old]).abs().amax(dim=1).gt(0)
    assert base_moved.float().mean() > 0.99  # (nearly) every base row, not only the prompt's tokens
    n = len(tok)  # the virtual rows; past them the padding to a multiple of 64
    assert (after[EMB][n_old:n] - before[EMB][n_old:n]).abs().amax(dim=1).gt(1e-4).all()
    emb = after[EMB].detach()
    d_base = relative_drift(before[EMB][:n_old], emb[:n_old])
    d_virtual = relative_drift(before[EMB][n_old:n], emb[n_old:n])
    assert 0 < d_base < d_virtual
    assert tr.model.get_base_model().get_output_embeddings().weight is tr.model.get_base_model().get_input_embeddings().weight
    for n, p in before.items():
        if n != EMB:
            assert torch.equal(after[n], p), f"{n} changed"
    trained = after[EMB].detach().clone()
    merged = tr.merged()
    assert merged.get_output_embeddings().weight is merged.get_input_embeddings().weight
    assert torch.equal(merged.get_input_embeddings().weight, trained)


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
                          StageSchedule(max_steps=1, learning_rate=1e-3, warmup_ratio=0.0, lr_scheduler="constant"),
                          tmp_path / str(scale), "t")
        trainer = ToolsenseSFTTrainer(model=tr.model, args=args, train_dataset=data, processing_class=tok, embedding_lr_scale=scale)
        trainer.train()
        lrs = sorted(g["lr"] for g in trainer.optimizer.param_groups)
        steps[scale] = (model.get_input_embeddings().weight.detach()[n_old:] - emb_before).abs().amax().item()
        assert lrs[-1] == pytest.approx(1e-3 * scale)
    assert steps[1.0] == pytest.approx(1e-3, rel=0.05)
    assert steps[20.0] == pytest.approx(2e-2, rel=0.05)


def test_all_rows_survive_stage_save_and_checkpoint_round_trip(tmp_path):
    """Under embedding_rows=all the Stage-1 folder holds the trained base rows (the merged model
    is saved whole), and each checkpoint's embedding_rows.pt holds the whole matrix, which a
    fresh run restores exactly; a run training only the virtual rows refuses that file."""
    from toolsense.catalog import load_catalog as load
    from toolsense.index import ToolIndex
    from toolsense.models import ModelConfig, load_model_and_tokenizer
    from toolsense.training import to_train_config
    from toolsense.training.runner import load_or_build_index
    from toolsense.training.stage import StageRunner
    from toolsense.training.trainer import ROWS_FILE, restore_embedding_rows

    cfg = to_train_config(compose_train([*TINY, "experiment=tg", "stage1.max_steps=2", "trainer.save_steps=2",
                                         "stage1.learning_rate=1e-2", f"output_dir={tmp_path}"]))
    assert cfg.tuning.embedding_rows == "all"
    catalog = load(cfg.catalog.path)
    index = load_or_build_index(cfg, catalog, tmp_path)
    examples = build_memorization_examples(catalog, index, cfg.memorization)
    runner = StageRunner("stage1", cfg, cfg.stage1, index, examples, tmp_path)
    runner.setup()
    runner.train()
    trained = runner.trainable.model.get_base_model().get_input_embeddings().weight.detach().clone()
    runner.save()

    base, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    n_old = len(tok)
    assert not torch.equal(trained[:n_old], base.get_input_embeddings().weight[:n_old])  # base rows trained
    saved, _ = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"), path=tmp_path / "stage1")
    assert torch.equal(saved.get_input_embeddings().weight, trained)
    assert saved.get_output_embeddings().weight is saved.get_input_embeddings().weight

    ckpt = tmp_path / "checkpoints" / "stage1" / "checkpoint-2"
    rows = torch.load(ckpt / ROWS_FILE)
    assert rows["row_ids"] is None and torch.equal(rows["rows.0"], trained)
    _embedding_written_once(ckpt, trained.shape)
    fresh, ftok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    ids = add_index_tokens(ToolIndex.load(tmp_path / "index.json", catalog), fresh, ftok)
    tr = prepare_trainable(fresh, TuningConfig(r=8, alpha=16), ids)
    assert restore_embedding_rows(tr, ckpt)
    assert torch.equal(tr.model.get_base_model().get_input_embeddings().weight, trained)
    virtual = prepare_trainable(load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"), path=tmp_path / "stage1")[0],
                                TuningConfig(r=8, alpha=16, embedding_rows="virtual"), ids)
    with pytest.raises(ValueError, match=r"embedding_rows.pt holds all rows of the embedding, this run trains 9 rows"):
        restore_embedding_rows(virtual, ckpt)


def _embedding_written_once(ckpt, shape) -> None:
    """The checkpoint's adapter file holds the LoRA matrices only: the embedding lives in
    embedding_rows.pt alone (PEFT's default wrote the resized matrix there too, and the tied head
    again under lm_head: three copies under embedding_rows=all)."""
    from safetensors import safe_open

    with safe_open(str(ckpt / "adapter_model.safetensors"), "pt") as h:
        keys = list(h.keys())
        assert keys and all("lora_" in k for k in keys), [k for k in keys if "lora_" not in k]
        adapter_bytes = sum(h.get_slice(k).get_shape()[0] * h.get_slice(k).get_shape()[1] * 4 for k in keys)
    matrix_bytes = shape[0] * shape[1] * 4
    assert (ckpt / "adapter_model.safetensors").stat().st_size < adapter_bytes + 64 * 1024 < matrix_bytes + adapter_bytes


def test_virtual_rows_checkpoint_holds_only_the_virtual_rows(tmp_path):
    """embedding_rows=virtual: the checkpoint carries the 9 virtual rows (embedding_rows.pt) and the
    adapters; the whole embedding matrix is written nowhere."""
    from toolsense.catalog import load_catalog as load
    from toolsense.training import to_train_config
    from toolsense.training.runner import load_or_build_index
    from toolsense.training.stage import StageRunner
    from toolsense.training.trainer import ROWS_FILE

    cfg = to_train_config(compose_train([*TINY, "experiment=tg", "stage1.max_steps=2", "trainer.save_steps=2",
                                         "tuning.embedding_rows=virtual", f"output_dir={tmp_path}"]))
    catalog = load(cfg.catalog.path)
    index = load_or_build_index(cfg, catalog, tmp_path)
    runner = StageRunner("stage1", cfg, cfg.stage1, index, build_memorization_examples(catalog, index, cfg.memorization), tmp_path)
    runner.setup()
    runner.train()
    emb = runner.trainable.model.get_base_model().get_input_embeddings().weight
    ckpt = tmp_path / "checkpoints" / "stage1" / "checkpoint-2"
    rows = torch.load(ckpt / ROWS_FILE)
    assert len(rows["row_ids"]) == 9 and torch.equal(rows["rows.0"], emb.detach()[rows["row_ids"]])
    _embedding_written_once(ckpt, emb.shape)
