"""Composing the real train config with overrides, and tiny assets for fast runs on tiny_random."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets" / "training"

# 9 demo tools of 3 weather services and 16 queries about them; tiny_random; steps of 4 examples;
# 3-way k-means for clustered indexes (ToolGen's 10-way would give 9 tools one level, no hierarchy).
TINY = [
    "model=tiny_random",
    "index.branching=3",
    f"catalog.path={ASSETS / 'tools.jsonl'}",
    "stage2=jsonl",
    f"stage2.sources.0.path={ASSETS / 'queries.jsonl'}",
    "stage2.sources.0.split=null",
    "memorization.mcts_negatives=3",
    "trainer.effective_batch=4",
    "trainer.per_device_batch=4",
    "trainer.logging_steps=1",
    "trainer.save_steps=1000",
    "stage1.max_steps=4",
    "stage2.max_steps=4",
    "stage1.warmup_ratio=0",
    "stage2.warmup_ratio=0",
    "stage1.lr_scheduler=constant",
    "stage2.lr_scheduler=constant",
]


def compose_train(overrides: list[str]):
    from toolsense.training import register_configs
    from toolsense.utils.compose import compose

    register_configs()
    return compose("train", overrides)


@pytest.fixture
def tiny_overrides() -> list[str]:
    return list(TINY)
