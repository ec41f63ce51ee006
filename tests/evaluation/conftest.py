"""Fixtures of the evaluation tests: a tiny training run directory built by hand (the
train.py contract). The bigram model of the decoding tests is in tests/decoding/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "evaluation"


def make_run_dir(root: Path, builder: str = "flat", perturb: float = 0.0) -> Path:
    """tiny_random + the demo catalog's index → <root>/{config.yaml,index.json,stage1,stage2}.
    ``stage2`` = stage1 with every virtual-token row moved by ``perturb`` × a seeded direction."""
    from omegaconf import OmegaConf

    from toolsense.catalog import load_demo_catalog
    from toolsense.index import add_index_tokens, build_index
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    cat = load_demo_catalog()
    index = build_index(cat, builder)
    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    ids = add_index_tokens(index, model, tok)
    index.save(root / "index.json")
    model.save_pretrained(root / "stage1")
    tok.save_pretrained(root / "stage1")
    if perturb:
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            emb = model.get_input_embeddings().weight
            emb[ids] += perturb * torch.randn(len(ids), emb.shape[1], generator=g)
    model.save_pretrained(root / "stage2")
    tok.save_pretrained(root / "stage2")
    cfg = {
        "model": {"name_or_path": "tiny_random", "dtype": "float32", "eos_token": "<|im_end|>"},
        "catalog": {"path": None, "format": "auto", "on_duplicate": "error"},
        "index": {"builder": builder},
        "prompts": {"system_prompt": "Pick the tool.", "use_system_prompt": True, "retrieval_template": "Query: {query}"},
        "trainer": {"max_steps": 2},  # training-only keys are ignored by evaluation
    }
    OmegaConf.save(OmegaConf.create(cfg), root / "config.yaml")
    return root


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_model_dir) -> Path:
    return make_run_dir(tmp_path_factory.mktemp("run_flat"), "flat", perturb=0.5)


@pytest.fixture(autouse=True, scope="session")
def _evaluate_schema():
    """evaluate.yaml lists evaluate_schema first; evaluate.py registers it, tests that compose do so here."""
    from toolsense.evaluation.config import register_configs

    register_configs()
