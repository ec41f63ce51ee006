"""A stage's device-memory plan, from the model's config numbers alone (no weights loaded), and
the refusal of a full fine-tuning that cannot fit on plain DDP.

Per device, in bytes, for the back end the trainer section picks:

* **weights** — without DeepSpeed (``trainer=gpu`` / ``cpu``): under LoRA the frozen base in the
  loaded dtype (bf16 where the Trainer computes in bf16: ``trainer.master_weights``) and the
  trainable adapters and embedding matrices in fp32; under full fine-tuning every weight in fp32;
  with bf16 compute, plus autocast's bf16 copies of the fp32 weights the matmuls read (the
  adapters and the LM head; under full fine-tuning all but the input embedding's lookup), held
  until the backward pass. Under DeepSpeed every weight in bf16, ZeRO-3 sharding them over the ranks;
* **gradients** — fp32 per trainable weight without DeepSpeed; under ZeRO a bf16 gradient plus
  the fp32 accumulation buffer (``data_types.grad_accum_dtype``), sharded over the ranks;
* **optimizer** — AdamW's two fp32 moments per trainable weight, plus DeepSpeed's fp32 master
  copy; sharded over the ranks under ZeRO;
* **activations** — per example of ``trainer.per_device_batch`` at ``trainer.max_length``
  tokens: with gradient checkpointing each layer's input (the residual stream: fp32 without
  DeepSpeed, where the fp32 embedding feeds it, bf16 under DeepSpeed) plus one layer recomputed
  (``12 x hidden + 5 x intermediate`` values per token, bf16); without it every layer's working
  set; plus the LM head's fp32 logits, their softmax and gradient over ``LABELLED_TOKENS``
  completion positions per example (the trainer projects labelled positions only).

LoRA's adapters are counted on the seven projections of a Llama / Qwen / Gemma decoder layer
(``all-linear``). An estimate to plan with, not a measurement: ``benchmarks/gpu_check.py``
prints it beside the measured peak of an 8B-shaped step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from toolsense.models import ModelConfig
from toolsense.training.config import TrainerConfig, TuningConfig
from toolsense.utils.errors import ConfigError

log = logging.getLogger(__name__)

GIB = 2**30
FFT_DDP_MAX_PARAMS = 3_000_000_000
"""Full fine-tuning without DeepSpeed keeps 16 bytes per weight on every GPU (fp32 weight,
gradient, two Adam moments): past 3B parameters (48 GB before activations) it does not fit an
80 GB device, so it is refused in favour of ZeRO-3."""
LABELLED_TOKENS = 128
"""Completion positions per example the plan gives the LM head (a tool token, or a description)."""
PAD_ROWS = 64
"""``add_index_tokens`` pads the vocabulary to a multiple of 64 rows."""


@dataclass(frozen=True)
class Shape:
    """The numbers of a decoder-only config that size its memory."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    rows: int
    """Embedding rows: the vocabulary with the virtual tokens, padded to a multiple of 64."""
    tied: bool

    @classmethod
    def from_config(cls, config, new_tokens: int = 0) -> "Shape":
        """From a transformers config (its text config for a multimodal one); ``new_tokens``
        virtual tokens are added to its vocabulary (0 when the checkpoint holds them already)."""
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        heads = text.num_attention_heads
        rows = text.vocab_size + new_tokens
        tied = bool(getattr(text, "tie_word_embeddings", getattr(config, "tie_word_embeddings", False)))
        return cls(text.hidden_size, text.intermediate_size, text.num_hidden_layers, heads,
                   getattr(text, "num_key_value_heads", None) or heads, getattr(text, "head_dim", None) or text.hidden_size // heads,
                   -(-rows // PAD_ROWS) * PAD_ROWS, tied)

    @property
    def embedding_params(self) -> int:
        return self.rows * self.hidden * (1 if self.tied else 2)

    @property
    def layer_params(self) -> int:
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        return 2 * h * q + 2 * h * kv + 3 * h * self.intermediate + 2 * h

    @property
    def params(self) -> int:
        return self.layers * self.layer_params + self.hidden + self.embedding_params

    def lora_params(self, r: int) -> int:
        h, q, kv, i = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim, self.intermediate
        return self.layers * r * ((h + q) * 2 + (h + kv) * 2 + (h + i) * 3)


def model_shape(model: ModelConfig, path: str | Path | None = None, new_tokens: int = 0) -> Shape | None:
    """The :class:`Shape` of ``path`` (else the configured model) read from its ``config.json``
    alone; None where that cannot be read here (a hub model not cached: its load says why)."""
    from transformers import AutoConfig

    from toolsense.models.loading import resolve_model_dir

    src = str(path) if path is not None else resolve_model_dir(model)
    try:
        return Shape.from_config(AutoConfig.from_pretrained(src, trust_remote_code=model.trust_remote_code), new_tokens)
    except (OSError, ValueError, AttributeError) as e:
        log.warning("no memory plan for %s: its config cannot be read here (%s)", src, e)
        return None


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes per device of each part (see the module doc)."""

    backend: str
    params: int
    trainable: int
    weights: int
    gradients: int
    optimizer: int
    activations: int

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer + self.activations

    def text(self) -> str:
        parts = ", ".join(f"{k} {getattr(self, k) / GIB:.1f}" for k in ("weights", "gradients", "optimizer", "activations"))
        return (f"memory plan per device ({self.backend}; {self.params / 1e9:.2f}B parameters, {self.trainable / 1e9:.3f}B "
                f"trainable), GiB: {parts}; total {self.total / GIB:.1f} (an estimate: training/memory.py)")


def backend(trainer: TrainerConfig) -> str:
    """``ddp`` (no DeepSpeed: trainer=gpu or cpu), ``zero2`` or ``zero3``."""
    stage = ((trainer.deepspeed or {}).get("zero_optimization") or {}).get("stage") if trainer.deepspeed else None
    return "ddp" if stage is None else ("zero3" if int(stage) == 3 else "zero2")


def memory_plan(shape: Shape, tuning: TuningConfig, trainer: TrainerConfig, world_size: int = 1, bf16: bool = True,
                per_device: int | None = None) -> MemoryPlan:
    """The plan of one stage (module doc). ``bf16``: the Trainer computes in bf16 (frozen LoRA
    weights are then loaded in bf16); ``per_device``: examples per device (default the trainer's)."""
    kind = backend(trainer)
    total = shape.params
    trainable = total if tuning.method == "full" else shape.lora_params(tuning.r) + shape.embedding_params
    shard = world_size if kind != "ddp" else 1
    if kind == "ddp":
        frozen_width = 2 if bf16 and tuning.method == "lora" else 4
        weights = (total - trainable) * frozen_width + trainable * 4
        if bf16:  # autocast's bf16 copies of the fp32 weights its matmuls read, kept for the backward pass
            matmul = (shape.lora_params(tuning.r) + shape.rows * shape.hidden if tuning.method == "lora"
                      else total - shape.rows * shape.hidden)
            weights += matmul * 2
        gradients, optimizer, residual = trainable * 4, trainable * 8, 4
    else:
        weights = total * 2 // (world_size if kind == "zero3" else 1)
        gradients, optimizer, residual = trainable * (2 + 4) // shard, trainable * 12 // shard, 2
    batch = per_device or trainer.per_device_batch
    tokens = batch * trainer.max_length
    layer_set = tokens * (12 * shape.hidden + 5 * shape.intermediate) * 2
    if trainer.gradient_checkpointing:
        activations = shape.layers * tokens * shape.hidden * residual + layer_set
    else:
        activations = shape.layers * layer_set
    activations += batch * min(LABELLED_TOKENS, trainer.max_length) * shape.rows * 4 * 3
    return MemoryPlan(kind, total, trainable, weights, gradients, optimizer, activations)


def device_memory() -> int | None:
    """This process's GPU's memory in bytes; None without a usable CUDA device."""
    import torch

    if not torch.cuda.is_available():
        return None
    try:
        return torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    except (AssertionError, RuntimeError):  # CUDA reported but not usable (a CPU build, a driver problem)
        return None


def refuse_unfit(shape: Shape, tuning: TuningConfig, trainer: TrainerConfig, world_size: int = 1,
                 device: int | None = None, bf16: bool = True, per_device: int | None = None) -> None:
    """Refuse, before the model loads, a stage that cannot fit: full fine-tuning past
    :data:`FFT_DDP_MAX_PARAMS` without DeepSpeed (naming the ZeRO-3 config), and, where this GPU's
    memory ``device`` (bytes) is known, a plan over ``world_size`` ranks that exceeds it (ZeRO-3 on
    one rank shards nothing): the message names the per-GPU numbers and each fix that fits
    (:func:`fixes`)."""
    if tuning.method == "full" and backend(trainer) == "ddp" and shape.params > FFT_DDP_MAX_PARAMS:
        raise ConfigError(
            f"tuning=full of a {shape.params / 1e9:.1f}B-parameter model without DeepSpeed keeps fp32 weights, gradients and "
            f"two Adam moments on every device: {shape.params * 16 / GIB:.0f} GiB each before activations (plain DDP shards "
            f"nothing; the limit here is {FFT_DDP_MAX_PARAMS / 1e9:.0f}B). Use trainer=ds_zero3 (conf/trainer/ds_zero3.yaml: "
            "weights, gradients and optimizer states sharded over the GPUs), or tuning=lora")
    if device is None:
        return
    plan = memory_plan(shape, tuning, trainer, world_size, bf16, per_device)
    if plan.total <= device:
        return
    ways = fixes(shape, tuning, trainer, world_size, device, bf16, per_device)
    raise ConfigError(f"trainer: the stage does not fit: {plan.text()}, on {world_size} rank(s), over this GPU's {device / GIB:.1f} GiB. "
                     + ("Fits: " + "; ".join(ways) if ways else "Nothing tried fits (more ranks under ZeRO-3, LoRA): use a GPU "
                        "with more memory or a smaller model") + " (docs/guides/gpu.md)")


def fixes(shape: Shape, tuning: TuningConfig, trainer: TrainerConfig, world_size: int, device: int, bf16: bool = True,
          per_device: int | None = None) -> list[str]:
    """The changes that make the plan fit ``device`` bytes, each with its per-GPU total: ZeRO-3 over
    the fewest ranks (powers of two up to 64) that fit, then LoRA on the same ranks."""
    from dataclasses import replace

    out = []
    zero3 = replace(trainer, deepspeed={**(trainer.deepspeed or {}), "zero_optimization": {"stage": 3}})
    for ranks in (1, 2, 4, 8, 16, 32, 64):
        plan = memory_plan(shape, tuning, zero3, ranks, bf16, per_device)
        if ranks >= world_size and plan.total <= device:
            out.append(f"trainer=ds_zero3 over {ranks} GPU(s) (launcher=slurm_gpu, or hydra.launcher.tasks_per_node="
                       f"{min(ranks, 8)} hydra.launcher.nodes={-(-ranks // 8)}): {plan.total / GIB:.1f} GiB each")
            break
    if tuning.method == "full":
        lora = memory_plan(shape, replace(tuning, method="lora"), trainer, world_size, bf16, per_device)
        if lora.total <= device:
            out.append(f"tuning=lora on {world_size} rank(s): {lora.total / GIB:.1f} GiB each")
    return out
