"""A small, self-contained LoRA fine-tune of a causal LM on the fit partition (the audit's
"agentic model" in the demo). Plain torch loop over PEFT; the loss covers the answer only.

Deliberately independent of ``toolsense.training`` (the audit stands on ``models`` alone)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import torch
from tqdm.auto import tqdm

from toolsense.audit.prompting import AuditPromptConfig, answer_text, build_messages
from toolsense.audit.traces import TraceRecord
from toolsense.models import ModelConfig, load_model_and_tokenizer

log = logging.getLogger(__name__)


@dataclass
class FinetuneConfig:
    enabled: Optional[bool] = None
    """Fine-tune before scoring; the adapter then becomes scorer.adapter. None = only in demo mode with the hf scorer."""
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    last_layers: Optional[int] = 8
    """Adapt only the last N transformer layers (None = all): backprop then stops there, which
    makes a CPU step several times cheaper."""
    lr: float = 5e-3
    epochs: int = 2
    batch_size: int = 4
    max_length: int = 384
    """Longer examples are cut from the left of the prompt (the answer is always kept)."""
    positive_answer: int = 9
    negative_answer: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("finetune.epochs and finetune.batch_size must be >= 1")
        if not (1 <= self.negative_answer <= 10 and 1 <= self.positive_answer <= 10):
            raise ValueError("finetune.positive_answer/negative_answer must be in 1..10")


def encode_examples(tok, records: Sequence[TraceRecord], prompt: AuditPromptConfig, cfg: FinetuneConfig) -> list[tuple[list[int], list[int]]]:
    """(input_ids, labels) per record; labels are -100 on the prompt."""
    out = []
    for rec in records:
        p = tok.apply_chat_template(build_messages(rec, prompt), tokenize=False, add_generation_prompt=True)
        a = answer_text(rec.label, cfg.positive_answer, cfg.negative_answer) + tok.eos_token
        p_ids = tok(p, add_special_tokens=False)["input_ids"]
        a_ids = tok(a, add_special_tokens=False)["input_ids"]
        p_ids = p_ids[-(cfg.max_length - len(a_ids)):]
        out.append((p_ids + a_ids, [-100] * len(p_ids) + a_ids))
    return out


def _batches(examples, batch_size: int, pad_id: int, rng: random.Random):
    """Left-padded batches, so every answer ends at the last column and only the answer's
    logits need computing (the LM head over a 50k vocabulary is a third of a small model's cost)."""
    order = list(range(len(examples)))
    rng.shuffle(order)
    for i in range(0, len(order), batch_size):
        chunk = [examples[j] for j in order[i:i + batch_size]]
        width = max(len(x) for x, _ in chunk)
        ids = torch.full((len(chunk), width), pad_id)
        labels = torch.full((len(chunk), width), -100)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, (x, y) in enumerate(chunk):
            ids[r, width - len(x):] = torch.tensor(x)
            labels[r, width - len(y):] = torch.tensor(y)
            mask[r, width - len(x):] = 1
        yield ids, mask, labels


def answer_loss(model, ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss over the answer tokens of a left-padded batch."""
    n_ans = int((labels != -100).sum(dim=1).max())
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=n_ans + 1).logits
    target = labels[:, -n_ans:]
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), target.reshape(-1),
                                             ignore_index=-100)


def finetune_key(model_cfg: ModelConfig, records: Sequence[TraceRecord], prompt: AuditPromptConfig, cfg: FinetuneConfig) -> str:
    h = hashlib.sha256(json.dumps([asdict(model_cfg), asdict(prompt), asdict(cfg)], sort_keys=True).encode())
    for r in records:
        h.update(json.dumps([r.id, r.label, [(x.tool, x.text) for x in r.results], r.fields], sort_keys=True).encode())
    return h.hexdigest()[:16]


def finetune_lora(model_cfg: ModelConfig, records: Sequence[TraceRecord], prompt: AuditPromptConfig,
                  cfg: FinetuneConfig, out_dir: str | Path) -> Path:
    """Train a LoRA adapter on ``records`` and save it to ``out_dir``; returns that folder.

    A finished adapter with the same key (model, prompt, config, data) is reused, so a rerun
    skips training. Per-step losses go to ``out_dir/metrics.jsonl``."""
    from peft import LoraConfig, get_peft_model

    out_dir = Path(out_dir)
    key = finetune_key(model_cfg, records, prompt, cfg)
    done = out_dir / "finetune.json"
    if done.exists() and json.loads(done.read_text()).get("key") == key:
        log.info("reusing LoRA adapter in %s", out_dir)
        return out_dir
    torch.manual_seed(cfg.seed)
    model, tok = load_model_and_tokenizer(model_cfg)
    n_layers = model.config.num_hidden_layers
    layers = list(range(max(0, n_layers - cfg.last_layers), n_layers)) if cfg.last_layers else None
    model = get_peft_model(model, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                             target_modules=list(cfg.target_modules), layers_to_transform=layers,
                                             task_type="CAUSAL_LM"))
    examples = encode_examples(tok, records, prompt, cfg)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr)
    steps = cfg.epochs * math.ceil(len(examples) / cfg.batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10)) * max(0.0, 1 - s / steps))
    rng = random.Random(cfg.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    losses = []
    model.train()
    with open(out_dir / "metrics.jsonl", "w") as mf, tqdm(total=steps, desc="LoRA fine-tune", leave=False) as bar:
        for epoch in range(cfg.epochs):
            for ids, mask, labels in _batches(examples, cfg.batch_size, tok.pad_token_id, rng):
                loss = answer_loss(model, ids, mask, labels)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                opt.zero_grad()
                losses.append(float(loss.detach()))
                mf.write(json.dumps({"audit/finetune_loss": losses[-1], "step": len(losses), "epoch": epoch}) + "\n")
                mf.flush()
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
    model.save_pretrained(out_dir)
    done.write_text(json.dumps({"key": key, "steps": len(losses), "first_loss": losses[0], "last_loss": losses[-1],
                                "examples": len(examples)}, indent=2))
    return out_dir
