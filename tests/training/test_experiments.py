"""Every experiment x tuning trains tiny_random end to end through the real Hydra config and
writes the run-directory contract; losses fall and exactly the intended parameters move (LoRA:
adapters and every embedding row, the paper's trainable embeddings)."""

from __future__ import annotations

import json

import pytest
import torch
from omegaconf import OmegaConf

from tests.training.conftest import TINY, compose_train
from tests.training.helpers import mean_completion_loss
from toolsense.catalog import load_catalog
from toolsense.data.memorization import build_memorization_examples
from toolsense.index import ToolIndex, add_index_tokens
from toolsense.models import ModelConfig, load_model_and_tokenizer
from toolsense.training import run, to_train_config
from toolsense.training.runner import stage2_examples, stage2_queries

LR = {"lora": "3e-3", "full": "3e-3"}


# Every experiment with LoRA and tg with full fine-tuning in the default run; the other full runs are slow (full
# fine-tuning is one code path whatever the experiment; each experiment's own index and formats show under LoRA).
@pytest.mark.parametrize("experiment,tuning", [
    *[(e, "lora") for e in ("tg", "tg_h", "tg_3fm", "tg_5fm")], ("tg", "full"),
    *[pytest.param(e, "full", marks=pytest.mark.slow) for e in ("tg_h", "tg_3fm", "tg_5fm")]])
def test_experiment_trains(experiment, tuning, tmp_path):
    cfg = compose_train([f"experiment={experiment}", f"tuning={tuning}", *TINY, f"output_dir={tmp_path}",
                         f"stage1.learning_rate={LR[tuning]}", f"stage2.learning_rate={LR[tuning]}"])
    summary = run(cfg)
    typed = to_train_config(cfg)

    # The run-directory contract.
    for name in ("config.yaml", "index.json", "stage1/config.json", "stage1/tokenizer.json", "stage2/model.safetensors", "metrics.jsonl"):
        assert (tmp_path / name).exists(), name
    saved = OmegaConf.load(tmp_path / "config.yaml")
    builder = {"tg": "flat", "tg_3fm": "flat"}.get(experiment, "clustered")
    assert saved.index.builder == builder
    assert saved.prompts.use_system_prompt is (experiment != "tg")
    assert saved.tuning.embedding_rows == "all"
    assert list(saved.memorization.formats) == typed.memorization.formats
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert sum("train/stage1/loss" in r for r in rows) == 4 and sum("train/stage2/loss" in r for r in rows) == 4
    assert summary["stage1"]["global_step"] == 4 and summary["stage2"]["global_step"] == 4

    catalog = load_catalog(typed.catalog.path)
    index = ToolIndex.load(tmp_path / "index.json", catalog)
    assert {len(p) for p in index.paths.values()} == ({2} if builder == "clustered" else {1})  # 9 tools, 3-way k-means
    mcfg = ModelConfig("tiny_random", dtype="float32")
    base, tok = load_model_and_tokenizer(mcfg)
    n_old = len(tok)
    add_index_tokens(index, base, tok)
    s1, tok1 = load_model_and_tokenizer(mcfg, path=tmp_path / "stage1")
    s2, _ = load_model_and_tokenizer(mcfg, path=tmp_path / "stage2")
    assert tok1.get_vocab() == tok.get_vocab()
    assert s1.get_output_embeddings().weight is s1.get_input_embeddings().weight  # tying preserved

    # Loss falls: Stage 1 on the memorization examples, Stage 2 on the retrieval examples.
    memo = build_memorization_examples(catalog, index, typed.memorization)
    assert mean_completion_loss(s1, tok, memo) < mean_completion_loss(base, tok, memo) - 0.01
    retr, skipped = stage2_examples(typed, index, stage2_queries(typed))
    assert skipped == {"tools": 0, "queries": 0, "sample": []}
    assert mean_completion_loss(s2, tok, retr) < mean_completion_loss(s1, tok, retr) - 0.01

    # What moved.
    e0, e1 = base.get_input_embeddings().weight, s1.get_input_embeddings().weight
    moved = (e1[n_old:] - e0[n_old:]).abs().amax(dim=1) > 1e-5
    assert moved.sum() >= 3, "virtual-token rows did not change"
    p0, p1 = dict(base.named_parameters()), dict(s1.named_parameters())
    linear = [n for n in p0 if n.endswith("proj.weight")]
    others = [n for n in p0 if n not in linear and "embed_tokens" not in n and "lm_head" not in n]
    assert any(not torch.equal(p0[n], p1[n]) for n in linear)
    assert not torch.equal(e1[:n_old], e0[:n_old]), "base vocabulary rows did not train"  # LoRA: embedding_rows=all
    if tuning == "lora":
        assert all(torch.equal(p0[n], p1[n]) for n in others), "LoRA changed non-adapter base weights"
    else:
        assert any(not torch.equal(p0[n], p1[n]) for n in others)
