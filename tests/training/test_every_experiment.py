"""Every experiment x tuning config on disk (conf/experiment/*.yaml x conf/tuning/*.yaml, found, not named)
dry-runs on tiny_random: the config composes and passes every check (its evaluation after training too), and the
data and the model are prepared as training would prepare them (catalog, Stage-2 sources, index, Stage-1 and
Stage-2 examples, the model with the index's tokens made trainable by LoRA or full tuning), without training.
A new experiment file is covered by being there (issue 48; lightning-hydra-template's test over every experiment).
tests/training/test_experiments.py trains the paper's four configurations end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.training.conftest import TINY, compose_train
from toolsense.utils.compose import conf_dir

EXPERIMENTS = sorted(p.stem for p in (conf_dir() / "experiment").glob("*.yaml"))
TUNINGS = sorted(p.stem for p in (conf_dir() / "tuning").glob("*.yaml"))
REFUSED = {("demo", "full"): "tuning.embedding_rows=virtual freezes base-vocabulary rows under LoRA only"}
"""Combinations the config refuses before anything loads, with the message that names the field."""


def test_the_configs_are_found_on_disk():
    assert {"tg", "tg_h", "tg_3fm", "tg_5fm", "toolken", "ablate_formats", "demo"} <= set(EXPERIMENTS)
    assert TUNINGS == ["full", "lora"]


@pytest.mark.parametrize("tuning", TUNINGS)
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_dry_runs(experiment, tuning, tmp_path):
    from toolsense.data.memorization import build_memorization_examples
    from toolsense.index import add_index_tokens
    from toolsense.index.config import index_from_config
    from toolsense.models import load_model_and_tokenizer
    from toolsense.models.encoders import encoder_embeddings
    from toolsense.pipeline import evaluation_plan
    from toolsense.training import prepare, to_train_config
    from toolsense.training.runner import stage2_examples, stage2_queries
    from toolsense.training.tuning import prepare_trainable

    composed = compose_train([f"experiment={experiment}", f"tuning={tuning}", *TINY, f"output_dir={tmp_path}"])
    if (experiment, tuning) in REFUSED:
        with pytest.raises(ValueError, match=REFUSED[experiment, tuning]):
            to_train_config(composed)
        return
    cfg = to_train_config(composed)
    assert (cfg.experiment, cfg.tuning.method) == (experiment, tuning)
    evaluation_plan(cfg, Path(tmp_path))  # the evaluation after training is composed and checked too
    prepared = prepare(cfg)
    index = index_from_config(cfg.index, prepared.catalog, lambda: encoder_embeddings(prepared.catalog, cfg.index.encoder))
    assert set(index.paths) == {t.name for t in prepared.catalog}
    retrieval, skipped = stage2_examples(cfg, index, stage2_queries(cfg, prepared.sources))
    assert retrieval and skipped["tools"] == 0
    if cfg.head.kind == "toolken":  # a frozen LM and one output row per tool: nothing of Stage 1, no tokens added
        assert not cfg.stage1.enabled and index.scheme == "flat"
        return
    memorization = build_memorization_examples(prepared.catalog, index, cfg.memorization)
    assert {ex.kind for ex in memorization} == set(cfg.memorization.formats)
    model, tok = load_model_and_tokenizer(cfg.model)
    n_before = len(tok)
    ids = add_index_tokens(index, model, tok)
    assert len(tok) == n_before + len(index.tokens()) == n_before + len(ids)
    trainable = prepare_trainable(model, cfg.tuning, ids)
    trained = {n for n, p in trainable.model.named_parameters() if p.requires_grad}
    assert trainable.method == tuning and trained
    assert any("lora_" in n for n in trained) == (tuning == "lora")
