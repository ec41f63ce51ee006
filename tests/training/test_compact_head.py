"""Projecting only the labelled positions through the LM head (our CPU default) gives the same
loss, gradients and metrics as TRL's all-positions path, on padded batches."""

from __future__ import annotations

import pytest
import torch

from tests.training.conftest import ASSETS
from toolsense.catalog import load_catalog
from toolsense.data.examples import to_dataset
from toolsense.data.memorization import MemorizationConfig, build_memorization_examples
from toolsense.index import add_index_tokens, build_index
from toolsense.training.config import StageSchedule, TrainerConfig, TuningConfig
from toolsense.training.trainer import ToolsenseSFTTrainer, completion_positions_only, sft_config
from toolsense.training.tuning import prepare_trainable


def test_compact_head_matches_all_positions(tiny_model, tmp_path):
    import trl.trainer.utils as trl_utils

    model, tok = tiny_model
    cat = load_catalog(ASSETS / "tools.jsonl")
    index = build_index(cat, "flat")
    ids = add_index_tokens(index, model, tok)
    examples = build_memorization_examples(cat, index, MemorizationConfig(formats=["desc2tok", "tok2desc"]))
    data = to_dataset(examples, tok, 256)
    tr = prepare_trainable(model, TuningConfig(r=8, alpha=16), ids)
    args = sft_config(TrainerConfig(effective_batch=8, per_device_batch=8, batching="padded", use_cpu=True, save_steps=100),
                      StageSchedule(max_steps=1, learning_rate=1e-3, warmup_ratio=0.0), tmp_path, "t")
    trainer = ToolsenseSFTTrainer(model=tr.model, args=args, train_dataset=data, processing_class=tok)
    batch = trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))
    assert (batch["attention_mask"] == 0).any()  # padded rows: the masked positions are really there
    labelled = int((batch["labels"][:, 1:] != -100).sum())
    assert labelled < batch["labels"][:, 1:].numel() // 2  # most positions carry no label

    results = {}
    for compact in (False, True):
        trainer.compact_lm_head = compact
        trainer._metrics["train"].clear()
        tr.model.zero_grad()
        loss = trainer.compute_loss(tr.model, dict(batch))
        loss.backward()
        grads = {n: p.grad.clone() for n, p in tr.model.named_parameters() if p.grad is not None}
        results[compact] = (float(loss.detach()), grads, trainer._metrics["train"]["mean_token_accuracy"][-1],
                            trainer._metrics["train"]["entropy"][-1])
    (l0, g0, a0, e0), (l1, g1, a1, e1) = results[False], results[True]
    assert l1 == pytest.approx(l0, rel=1e-5)
    assert g0.keys() == g1.keys() and g0
    for n in g0:
        torch.testing.assert_close(g1[n], g0[n], rtol=1e-4, atol=1e-6, msg=n)
    assert a1 == a0 and abs(e1 - e0) < 1e-4
    assert trl_utils._use_triton(torch.device("cpu")) is False  # the switch is scoped to compute_loss


def test_switch_is_scoped_and_restored():
    import trl.trainer.utils as trl_utils

    before = trl_utils._use_triton
    with completion_positions_only():
        assert trl_utils._use_triton(torch.device("cpu"))
    assert trl_utils._use_triton is before
