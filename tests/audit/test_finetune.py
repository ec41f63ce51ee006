import json
import random

import pytest
import torch
from safetensors.torch import load_file

from toolsense.audit import finetune as ft
from toolsense.audit.config import FinetuneConfig
from toolsense.audit.finetune import answer_loss, balanced_batches, collate, encode_examples, finetune_lora, frozen_states, top_layers_only
from toolsense.audit.prompting import AuditPromptConfig
from toolsense.models import ModelConfig

MC = ModelConfig("tiny_random", dtype="float32", eos_token="<|im_end|>")


def test_examples_train_the_label_digit_or_the_whole_answer(tiny_model, demo_traces):
    _, tok = tiny_model
    recs = demo_traces.records[:4]
    pos, neg = (tok(a + tok.eos_token, add_special_tokens=False)["input_ids"] for a in ("<answer>9</answer>", "<answer>2</answer>"))
    d = next(i for i, (a, b) in enumerate(zip(pos, neg)) if a != b)
    for rec, (x, y) in zip(recs, encode_examples(tok, recs, AuditPromptConfig(), FinetuneConfig())):
        answer = pos if rec.label else neg
        assert x[-(d + 1):] == answer[:d + 1]  # ends at the digit: "<answer>" then 9 or 2
        assert [v for v in y if v != -100] == [answer[d]] and y[-1] == answer[d]
    for rec, (x, y) in zip(recs, encode_examples(tok, recs, AuditPromptConfig(), FinetuneConfig(loss_on="answer"))):
        answer = pos if rec.label else neg
        assert x[-len(answer):] == answer and y[-len(answer):] == answer and set(y[:-len(answer)]) == {-100}


def test_left_padded_answer_loss_equals_the_full_loss(tiny_model, demo_traces):
    """The cheap loss (answer logits only, left padding) equals HF's loss on the unpadded example."""
    model, tok = tiny_model
    ex = encode_examples(tok, demo_traces.records[:3], AuditPromptConfig(), FinetuneConfig(loss_on="answer"))
    ids, mask, labels = collate(ex, tok.pad_token_id)
    assert sorted(mask.sum(1).tolist()) == sorted(len(x) for x, _ in ex) and bool(mask[:, -1].all())
    with torch.no_grad():
        batched = answer_loss(model, ids, mask, labels)
        ref = [(model(input_ids=torch.tensor([x]), labels=torch.tensor([y])).loss, sum(v != -100 for v in y) - 1) for x, y in ex]
    assert float(batched) == pytest.approx(float(sum(ln * n for ln, n in ref) / sum(n for _, n in ref)), rel=1e-4)


def test_cached_frozen_layers_give_the_same_loss_and_gradients(tiny_model, demo_traces):
    """Training the last layer on cached states of the first equals training through both."""
    model, tok = tiny_model
    ex = encode_examples(tok, demo_traces.records[:4], AuditPromptConfig(), FinetuneConfig())
    states = frozen_states(model, ex, 1, tok.pad_token_id, batch_size=3)
    assert [s.shape for s in states] == [(len(x), model.config.hidden_size) for x, _ in ex]
    top = ft.decoder_layers(model)[1]
    full = answer_loss(model, *collate(ex, tok.pad_token_id))
    full.backward()
    g_full = top.mlp.down_proj.weight.grad.clone()
    model.zero_grad()
    with top_layers_only(model, 1):
        assert len(ft.decoder_layers(model)) == 1
        part = answer_loss(model, *collate(ex, tok.pad_token_id, states))
        part.backward()
    assert len(ft.decoder_layers(model)) == 2 and float(part) == pytest.approx(float(full), rel=1e-5)
    assert torch.allclose(top.mlp.down_proj.weight.grad, g_full, rtol=1e-4, atol=1e-6)


def test_balanced_batches_are_half_and_half_and_cycle_through_each_class():
    labels = [1] * 3 + [0] * 9
    batches = list(balanced_batches(labels, 4, 9, random.Random(0)))
    assert len(batches) == 9 and all(sorted(labels[i] for i in b) == [0, 0, 1, 1] for b in batches)
    negatives = [i for b in batches for i in b if labels[i] == 0]
    assert sorted(negatives) == sorted(list(range(3, 12)) * 2)  # 18 draws = every negative twice
    with pytest.raises(ValueError, match="needs records of both labels"):
        next(balanced_batches([1, 1], 2, 1, random.Random(0)))


def test_lora_finetune_learns_on_cached_states_and_is_reused(tiny_model_dir, demo_traces, tmp_path, monkeypatch):
    cfg = FinetuneConfig(enabled=True, steps=12, batch_size=4, lr=3e-2, lora_r=4, last_layers=1)
    recs = demo_traces.records[:8]
    out = finetune_lora(MC, recs, AuditPromptConfig(), cfg, tmp_path / "adapter")
    info = json.loads((out / "finetune.json").read_text())
    assert info["steps"] == 12 and info["examples"] == 8 and info["adapted_layers"] == [1, 2]
    losses = [json.loads(line)["audit/finetune_loss"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(losses) == 12
    # on the full model (no cache), the saved adapter lowers the loss of the label digit
    from peft import PeftModel

    from toolsense.models import load_model_and_tokenizer

    model, tok = load_model_and_tokenizer(MC)
    batch = collate(encode_examples(tok, recs, AuditPromptConfig(), cfg), tok.pad_token_id)
    with torch.no_grad():
        before = float(answer_loss(model, *batch))
        after = float(answer_loss(PeftModel.from_pretrained(model, str(out)), *batch))
    assert after < before - 0.3
    weights = load_file(out / "adapter_model.safetensors")
    lora_b = {k: v for k, v in weights.items() if "lora_B" in k}
    assert len(lora_b) == 7 and all(".layers.1." in k and float(v.abs().sum()) > 0 for k, v in lora_b.items())
    monkeypatch.setattr(ft, "load_model_and_tokenizer", lambda *a, **k: pytest.fail("retrained a finished adapter"))
    assert finetune_lora(MC, recs, AuditPromptConfig(), cfg, tmp_path / "adapter") == out


def test_finetune_config_errors():
    with pytest.raises(ValueError, match="finetune.positive_answer and finetune.negative_answer must differ"):
        FinetuneConfig(positive_answer=3, negative_answer=3)
    with pytest.raises(ValueError, match="finetune.loss_on must be label or answer"):
        FinetuneConfig(loss_on="all")
    with pytest.raises(ValueError, match="finetune.last_layers must be >= 1"):
        FinetuneConfig(last_layers=0)
