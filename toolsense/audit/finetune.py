"""A small, self-contained LoRA fine-tune of a causal LM on the fit partition (the audit's
"agentic model" in the demo). Plain torch loop over PEFT.

Why it looks the way it does (measured on SmolLM2-135M, 2 CPU cores): a greedy answer that is
right for one digit of eight answer tokens gives a loss that sits at chance for a long time, and
a step through all 30 layers costs seconds. So (1) by default only the digit that carries the
label is trained (``loss_on=label``), (2) batches are class-balanced, and (3) only the last
``last_layers`` layers are adapted: the frozen layers below then see the same input at every
step, so their output is computed once per example (``cache_frozen``) and every step runs the
adapted layers alone.

Deliberately independent of ``toolsense.training`` (the audit stands on ``models`` alone)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import random
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import torch
from tqdm.auto import tqdm

from toolsense.audit.config import FinetuneConfig
from toolsense.audit.prompting import AuditPromptConfig, answer_text, build_messages
from toolsense.audit.traces import TraceRecord
from toolsense.models import ModelConfig, default_device, load_model_and_tokenizer

log = logging.getLogger(__name__)


def encode_examples(
    tok, records: Sequence[TraceRecord], prompt: AuditPromptConfig, cfg: FinetuneConfig
) -> list[tuple[list[int], list[int]]]:
    """(input_ids, labels) per record; labels are -100 except on the trained answer tokens.

    With ``loss_on=label`` the example ends at the label token(s) (what follows is never
    trained), so the trained tokens are always the last columns of a left-padded batch."""
    pos, neg = (tok(answer_text(label, cfg.positive_answer, cfg.negative_answer) + tok.eos_token,
                    add_special_tokens=False)["input_ids"] for label in (1, 0))
    diff = [i for i, (a, b) in enumerate(zip(pos, neg)) if a != b] if len(pos) == len(neg) else []
    out = []
    for rec in records:
        p = tok.apply_chat_template(build_messages(rec, prompt), tokenize=False, add_generation_prompt=True)
        a_ids = pos if rec.label else neg
        trained = set(range(len(a_ids)))
        if cfg.loss_on == "label" and diff:
            a_ids, trained = a_ids[:diff[-1] + 1], set(diff)
        p_ids = tok(p, add_special_tokens=False)["input_ids"]
        p_ids = p_ids[-(cfg.max_length - len(a_ids)):]
        out.append((p_ids + a_ids, [-100] * len(p_ids) + [t if i in trained else -100 for i, t in enumerate(a_ids)]))
    return out


def _pad_left(rows: list[torch.Tensor], fill) -> torch.Tensor:
    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width) + tuple(rows[0].shape[1:]), fill, dtype=rows[0].dtype)
    for i, r in enumerate(rows):
        out[i, width - len(r):] = r
    return out


def collate(examples: Sequence[tuple[list[int], list[int]]], pad_id: int, states: Sequence[torch.Tensor] | None = None):
    """Left-padded (inputs, mask, labels): every answer ends at the last column, so only the
    answer's logits need computing (the LM head over a 50k vocabulary is a third of a small
    model's cost). ``inputs`` are token ids, or the cached frozen-layer states when given."""
    mask = _pad_left([torch.ones(len(x), dtype=torch.long) for x, _ in examples], 0)
    labels = _pad_left([torch.tensor(y) for _, y in examples], -100)
    inputs = _pad_left(list(states), 0.0) if states is not None else _pad_left([torch.tensor(x) for x, _ in examples], pad_id)
    return inputs, mask, labels


def balanced_batches(labels: Sequence[int], batch_size: int, steps: int, rng: random.Random):
    """``steps`` lists of example indices, half from each class (cycling through a fresh shuffle
    of each class), so no batch is one-sided however the classes are split."""
    pools = {c: [i for i, y in enumerate(labels) if y == c] for c in (0, 1)}
    if not pools[0] or not pools[1]:
        raise ValueError("finetune: the fit partition needs records of both labels")
    queues = {c: [] for c in (0, 1)}

    def take(c: int) -> int:
        if not queues[c]:
            queues[c] = rng.sample(pools[c], len(pools[c]))
        return queues[c].pop()

    for _ in range(steps):
        yield [take(b % 2) for b in range(batch_size)]


def answer_loss(model, inputs: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss over the trained answer tokens of a left-padded batch; ``inputs``
    are token ids (B, T) or input embeddings / cached states (B, T, H)."""
    dev = next(model.parameters()).device  # batches are collated on the CPU
    inputs, mask, labels = inputs.to(dev), mask.to(dev), labels.to(dev)
    n_ans = int((labels != -100).sum(dim=1).max())
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    key = "input_ids" if inputs.dim() == 2 else "inputs_embeds"
    logits = model(**{key: inputs}, attention_mask=mask, position_ids=positions, logits_to_keep=n_ans + 1, use_cache=False).logits
    target = labels[:, -n_ans:]
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), target.reshape(-1),
                                             ignore_index=-100)


def decoder_layers(model) -> torch.nn.ModuleList:
    """The transformer block list of a (PEFT-wrapped) HF decoder (``<CausalLM>.model.layers``)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    layers = getattr(getattr(base, "model", None), "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise TypeError(f"{type(base).__name__} has no .model.layers; set finetune.cache_frozen=false")
    return layers


@contextlib.contextmanager
def top_layers_only(model, first: int):
    """Temporarily drop blocks ``[0, first)``: the model then maps the states entering block
    ``first`` (passed as ``inputs_embeds``) to logits. Restored on exit, so saved adapter
    names keep their real layer indices."""
    inner = (model.get_base_model() if hasattr(model, "get_base_model") else model).model
    full = inner.layers
    inner.layers = torch.nn.ModuleList(list(full)[first:])
    try:
        yield model
    finally:
        inner.layers = full


@torch.no_grad()
def frozen_states(model, examples, first: int, pad_id: int, batch_size: int = 16) -> list[torch.Tensor]:
    """Per example, the (T, H) hidden states entering block ``first`` (unpadded), kept on the
    CPU (thousands of examples x T x H outgrow a GPU's memory; each batch moves its own)."""
    dev = next(model.parameters()).device
    out = []
    for b in tqdm(range(0, len(examples), batch_size), desc="frozen layers", leave=False):
        chunk = examples[b:b + batch_size]
        ids, mask, _ = collate(chunk, pad_id)
        ids, mask = ids.to(dev), mask.to(dev)
        hs = model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0),
                   output_hidden_states=True, logits_to_keep=1, use_cache=False).hidden_states[first]
        out += [h[m.bool()].cpu() for h, m in zip(hs, mask)]
    return out


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
    model, tok = load_model_and_tokenizer(model_cfg, device=default_device())
    n_layers = model.config.num_hidden_layers
    first = max(0, n_layers - cfg.last_layers) if cfg.last_layers else 0
    examples = encode_examples(tok, records, prompt, cfg)
    states = frozen_states(model, examples, first, tok.pad_token_id) if cfg.cache_frozen and first > 0 else None
    model = get_peft_model(model, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                             target_modules=list(cfg.target_modules),
                                             layers_to_transform=list(range(first, n_layers)) if first else None,
                                             task_type="CAUSAL_LM"))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr)
    warm = max(1, cfg.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / cfg.steps))
    rng = random.Random(cfg.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    losses = []
    model.train()
    stack = top_layers_only(model, first) if states is not None else contextlib.nullcontext(model)
    with stack, open(out_dir / "metrics.jsonl", "w") as mf, tqdm(total=cfg.steps, desc="LoRA fine-tune", leave=False) as bar:
        for step, batch in enumerate(balanced_batches([r.label for r in records], cfg.batch_size, cfg.steps, rng), 1):
            inputs, mask, labels = collate([examples[i] for i in batch], tok.pad_token_id,
                                           [states[i] for i in batch] if states is not None else None)
            loss = answer_loss(model, inputs, mask, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            losses.append(float(loss.detach()))
            mf.write(json.dumps({"audit/finetune_loss": losses[-1], "step": step}) + "\n")
            mf.flush()
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
    model.save_pretrained(out_dir)
    done.write_text(json.dumps({"key": key, "steps": len(losses), "first_loss": losses[0], "last_loss": losses[-1],
                                "examples": len(examples), "adapted_layers": [first, n_layers]}, indent=2))
    return out_dir
