"""The demo (TG-3FM + LoRA, SmolLM2, demo catalog, a few CPU minutes) lifts constrained
recall@1 on the demo's training queries far above the untrained model (with tokens added).

Set TOOLSENSE_DEMO_RUN=<run_dir> to score an existing ``train.py experiment=demo`` run instead
of training one here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.training.conftest import compose_train
from tests.training.helpers import constrained_recall_at_1
from toolsense.catalog import load_demo_catalog, load_demo_queries
from toolsense.index import ToolIndex, add_index_tokens
from toolsense.models import load_model_and_tokenizer
from toolsense.training import run, to_train_config


@pytest.mark.slow
def test_demo_lifts_constrained_recall(tmp_path, capsys):
    cfg = compose_train(["experiment=demo"])
    run_dir = Path(os.environ.get("TOOLSENSE_DEMO_RUN") or tmp_path)
    if not (run_dir / "stage2" / "config.json").exists():
        run(cfg, output_dir=run_dir)
    typed = to_train_config(cfg)
    index = ToolIndex.load(run_dir / "index.json", load_demo_catalog())
    queries = load_demo_queries(split="train")
    base, tok = load_model_and_tokenizer(typed.model)
    add_index_tokens(index, base, tok)
    before = constrained_recall_at_1(base, tok, queries, index, typed.prompts)
    del base
    trained, tok2 = load_model_and_tokenizer(typed.model, path=run_dir / "stage2")
    after = constrained_recall_at_1(trained, tok2, queries, index, typed.prompts)
    with capsys.disabled():
        print(f"\nconstrained recall@1 on {len(queries)} demo training queries: untrained {before:.3f} -> trained {after:.3f}")
    assert after >= before + 0.3 and after >= 0.5
