"""The stage's learning-rate schedule is the configured one: stage.warmup_ratio reaches the
Trainer as a fraction of the steps (transformers >= 5 reads warmup_steps < 1 so), checked on the
learning rate each optimiser step actually uses."""

from __future__ import annotations

import pytest
from transformers import TrainerCallback

from tests.training.conftest import ASSETS
from toolsense.catalog import load_catalog
from toolsense.data.examples import to_dataset
from toolsense.data.memorization import MemorizationConfig, build_memorization_examples
from toolsense.index import add_index_tokens, build_index
from toolsense.training.config import StageSchedule, TrainerConfig
from toolsense.training.trainer import ToolsenseSFTTrainer, sft_config


class _StepLR(TrainerCallback):
    def __init__(self):
        self.lrs = []

    def on_step_begin(self, args, state, control, optimizer=None, **kwargs):
        self.lrs.append(optimizer.param_groups[0]["lr"])


@pytest.mark.parametrize("scheduler, expected", [
    # 8 steps, warmup_ratio 0.25 -> 2 warmup steps: lr x step/2, then linear decay (8 - step)/6
    ("linear", [0, 1 / 2, 1, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6]),
    ("constant_with_warmup", [0, 1 / 2, 1, 1, 1, 1, 1, 1]),
])
def test_warmup_ratio_is_a_fraction_of_the_steps(tiny_model, tmp_path, scheduler, expected):
    model, tok = tiny_model
    cat = load_catalog(ASSETS / "tools.jsonl")
    index = build_index(cat, "flat")
    add_index_tokens(index, model, tok)
    data = to_dataset(build_memorization_examples(cat, index, MemorizationConfig()), tok, 256)
    args = sft_config(TrainerConfig(effective_batch=2, per_device_batch=2, use_cpu=True, save_steps=100),
                      StageSchedule(max_steps=8, learning_rate=1e-3, warmup_ratio=0.25, lr_scheduler=scheduler), tmp_path, "t")
    assert args.get_warmup_steps(8) == 2 and args.get_warmup_steps(100) == 25
    seen = _StepLR()
    ToolsenseSFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok, callbacks=[seen]).train()
    assert seen.lrs == pytest.approx([1e-3 * e for e in expected], abs=1e-12)


def test_a_ratio_of_one_or_more_is_refused():
    """warmup_steps=1.0 would mean one step, not the whole stage."""
    with pytest.raises(ValueError, match=r"^stage.warmup_ratio must be in \[0, 1\)"):
        sft_config(TrainerConfig(), StageSchedule(warmup_ratio=1.0), "unused", "t")
