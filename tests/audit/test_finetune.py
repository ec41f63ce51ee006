import json

import pytest
import torch
from safetensors.torch import load_file

from toolsense.audit import finetune as ft
from toolsense.audit.finetune import FinetuneConfig, _batches, answer_loss, encode_examples, finetune_lora
from toolsense.audit.prompting import AuditPromptConfig
from toolsense.models import ModelConfig

MC = ModelConfig("tiny_random", dtype="float32", eos_token="<|im_end|>")


def test_left_padded_answer_loss_equals_the_full_loss(tiny_model, demo_traces):
    """The cheap loss (answer logits only, left padding) equals HF's loss on the unpadded example."""
    model, tok = tiny_model
    cfg = FinetuneConfig()
    ex = encode_examples(tok, demo_traces.records[:3], AuditPromptConfig(), cfg)
    n_ans = len(tok("<answer>9</answer>" + tok.eos_token, add_special_tokens=False)["input_ids"])
    assert all(y[:-n_ans] == [-100] * (len(y) - n_ans) and -100 not in y[-n_ans:] for _, y in ex)
    import random
    ids, mask, labels = next(_batches(ex, 3, tok.pad_token_id, random.Random(0)))
    assert sorted(mask.sum(1).tolist()) == sorted(len(x) for x, _ in ex)
    assert bool(mask[:, -1].all()) and bool((labels[:, -n_ans:] != -100).all())  # left padding: answers end each row
    with torch.no_grad():
        batched = answer_loss(model, ids, mask, labels)
        ref = []
        for x, y in ex:
            out = model(input_ids=torch.tensor([x]), labels=torch.tensor([y]))
            ref.append((out.loss, sum(v != -100 for v in y) - 1))
        total = sum(l * n for l, n in ref) / sum(n for _, n in ref)
    assert float(batched) == pytest.approx(float(total), rel=1e-4)


def test_lora_finetune_learns_and_is_reused(tiny_model_dir, demo_traces, tmp_path, monkeypatch):
    cfg = FinetuneConfig(enabled=True, epochs=4, batch_size=4, lr=3e-2, lora_r=4,
                         target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    recs = demo_traces.records[:8]
    out = finetune_lora(MC, recs, AuditPromptConfig(), cfg, tmp_path / "adapter")
    info = json.loads((out / "finetune.json").read_text())
    assert info["steps"] == 8 and info["examples"] == 8
    losses = [json.loads(line)["audit/finetune_loss"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(losses) == 8 and losses[-1] < losses[0]
    # deterministic check on the training examples: the adapter lowers the answer loss. (tiny_random's
    # random tied embeddings cap how far LoRA alone can push the logits, so the drop is modest.)
    from peft import PeftModel

    from toolsense.models import load_model_and_tokenizer

    model, tok = load_model_and_tokenizer(MC)
    import random
    ids, mask, labels = next(_batches(encode_examples(tok, recs, AuditPromptConfig(), cfg), 8, tok.pad_token_id, random.Random(0)))
    with torch.no_grad():
        before = float(answer_loss(model, ids, mask, labels))
        after = float(answer_loss(PeftModel.from_pretrained(model, str(out)), ids, mask, labels))
    assert after < before - 0.3
    weights = load_file(out / "adapter_model.safetensors")
    lora_b = [v for k, v in weights.items() if "lora_B" in k]
    assert len(lora_b) == 2 * 7 and all(float(v.abs().sum()) > 0 for v in lora_b)  # B starts at zero
    monkeypatch.setattr(ft, "load_model_and_tokenizer", lambda *a, **k: pytest.fail("retrained a finished adapter"))
    assert finetune_lora(MC, recs, AuditPromptConfig(), cfg, tmp_path / "adapter") == out
