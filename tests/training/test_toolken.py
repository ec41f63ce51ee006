"""The toolken head (head.kind=toolken) trained through the real config spine on tiny_random:
its loss falls, only the toolken rows change (the base weights stay bit-identical), a resumed
run ends with the rows of an uninterrupted one, a finished head is skipped, and the config
refuses what the design cannot do."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.training.conftest import TINY, compose_train
from toolsense.training import to_train_config
from toolsense.training.runner import run

TOOLKEN = TINY + ["experiment=toolken", "stage2.max_steps=12", "trainer.save_steps=4", "trainer.save_total_limit=5",
                  "trainer.logging_steps=1"]


def _train(tmp, extra=()):
    cfg = to_train_config(compose_train(TOOLKEN + list(extra)))
    return cfg, run(cfg, output_dir=tmp)


def _base_state():
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    model, _ = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_toolken_trains_only_its_rows_and_its_loss_falls(tmp_path):
    before = _base_state()
    cfg, summary = _train(tmp_path / "run")
    s = summary["stage2"]
    assert s["head"] == "toolken" and s["global_step"] == 12 and s["examples"] == 16
    assert s["last_loss"] < s["first_loss"] - 0.05  # the rows learn
    head = torch.load(tmp_path / "run" / "toolken" / "head.pt")
    assert list(head) == ["tools", "rows"] and len(head["tools"]) == 9 and head["rows"].shape == (9, 64)
    from toolsense.models import ModelConfig, load_model_and_tokenizer
    from toolsense.models.toolken import name_mean_rows

    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    after = model.state_dict()
    assert set(after) == set(before) and all(torch.equal(after[k], before[k]) for k in before)  # base bit-identical
    from toolsense.catalog.config import load_from_config
    from toolsense.index import ToolIndex

    index = ToolIndex.load(tmp_path / "run" / "index.json", load_from_config(cfg.catalog))
    init = name_mean_rows(model, tok, [index.init_text[index.paths[t][0]] for t in head["tools"]])
    moved = (head["rows"] - init).norm(dim=1)
    assert (moved > 1e-4).all()  # every toolken row moved from its name-mean start
    rows = [json.loads(ln) for ln in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    logged = [r for r in rows if r.get("stage") == "toolken" and "train/toolken/loss" in r]
    assert [r["step"] for r in logged] == list(range(1, 13))
    assert not (tmp_path / "run" / "stage2").exists()
    assert run(to_train_config(compose_train(TOOLKEN)), output_dir=tmp_path / "run") == {}  # done: skipped


def test_toolken_resume_ends_with_the_uninterrupted_rows(tmp_path):
    _train(tmp_path / "a")
    full = torch.load(tmp_path / "a" / "toolken" / "head.pt")["rows"]
    ckpts = sorted(p.name for p in (tmp_path / "a" / "checkpoints" / "toolken").iterdir())
    assert ckpts == ["checkpoint-4", "checkpoint-8"]
    # an interrupted run: the head is not saved, the newest checkpoint is incomplete
    shutil.rmtree(tmp_path / "a" / "toolken")
    (tmp_path / "a" / "checkpoints" / "toolken" / "checkpoint-8" / "state.pt").unlink()
    _, summary = _train(tmp_path / "a")
    assert summary["stage2"]["resumed_from"].endswith("checkpoint-4")
    again = torch.load(tmp_path / "a" / "toolken" / "head.pt")["rows"]
    assert torch.allclose(again, full, atol=1e-6)
    rows = [json.loads(ln) for ln in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in rows if r.get("stage") == "toolken" and "train/toolken/loss" in r]
    assert sorted(steps) == list(range(1, 13))  # the redone steps replace the lost ones: each once


def test_toolken_learns_from_desc2tok_too(tmp_path):
    """head.formats=[desc2tok]: each tool's text, posed with the memorization prompt, is one more
    example whose answer is its toolken (9 tools + 16 queries)."""
    _, summary = _train(tmp_path / "run", ["head.formats=[desc2tok]", "stage2.max_steps=2"])
    assert summary["stage2"]["examples"] == 25 and summary["stage2"]["format_examples"] == 9


@pytest.mark.parametrize("extra,match", [
    (["head.formats=[tok2desc]"], "head.formats"),
    (["index=structural"], "index=flat"),
    (["stage1.enabled=true"], "stage1.enabled=false"),
    (["stage2.multi_tool=joint"], "multi_tool must be split"),
    (["evaluate.suite=demo"], "system=toolken"),
    (["head.batch_size=0"], "head.batch_size"),
])
def test_toolken_config_refusals_name_the_field(extra, match):
    with pytest.raises(Exception, match=match):
        to_train_config(compose_train(TOOLKEN + extra))
