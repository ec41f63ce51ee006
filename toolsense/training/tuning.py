"""What is trainable: LoRA adapters plus embedding rows, or every weight.

Under LoRA the (tied) embedding matrix itself stays a trainable parameter beside the adapters.
``tuning.embedding_rows=all`` trains all of it, as the paper's LoRA "with trainable embeddings";
``virtual`` masks its gradient to the virtual-token rows, so the base-vocabulary rows receive
exactly zero gradient and stay bit-identical.

Why not PEFT's ``trainable_token_indices`` (or ``modules_to_save``) for ``virtual``: TRL's
SFTTrainer computes the loss with a fused LM head that multiplies hidden states by
``lm_head.weight`` directly. On a tied ``lm_head`` PEFT wraps the head in a
``TrainableTokensWrapper`` and the fused head then fails (``'TrainableTokensWrapper' object has
no attribute 'bias'``); even where it runs, the fused head reads the raw weight and ignores the
wrapper's trainable rows on the output side. A gradient mask on the one tied tensor keeps the
input and output sides one tensor and leaves nothing to undo when merging.

The embedding matrices get no weight decay (:func:`no_decay_parameter_names`): under ``virtual``
decoupled decay would still shrink the zero-gradient rows; under ``all`` (and full fine-tuning)
it would shrink every rarely seen base row toward zero — drift from decay, not from learning.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from toolsense.training.config import TuningConfig
from toolsense.utils.modeling import embeddings_tied

log = logging.getLogger(__name__)


@dataclass
class Trainable:
    """The model to train and what was made trainable (for saving and for checks)."""

    model: torch.nn.Module
    method: str
    virtual_ids: list[int]
    row_params: list[torch.nn.Parameter] = field(default_factory=list)
    """Under LoRA: the embedding matrix, and the output matrix when untied (trained beside the adapters)."""
    row_ids: Optional[list[int]] = None
    """The rows of ``row_params`` that train: the virtual ids, or None for every row."""
    _hooks: list = field(default_factory=list, repr=False)

    def _index(self, p: torch.Tensor) -> Any:
        return slice(None) if self.row_ids is None else torch.tensor(self.row_ids, device=p.device)

    def trained_rows(self) -> dict[str, Any]:
        """The trained rows of ``row_params`` on CPU (whole matrices under embedding_rows=all):
        what a LoRA checkpoint must hold beside the adapters to resume exactly."""
        rows: dict[str, Any] = {"row_ids": self.row_ids}
        rows.update({f"rows.{i}": p.detach()[self._index(p)].cpu().clone() for i, p in enumerate(self.row_params)})
        return rows

    @torch.no_grad()
    def load_trained_rows(self, rows: dict[str, Any], source: str = "rows") -> None:
        """Write rows saved by :meth:`trained_rows` back; they must be the same rows of the same shape."""
        if rows.get("row_ids") != self.row_ids:
            saved = "all rows" if rows.get("row_ids") is None else f"{len(rows['row_ids'])} rows"
            mine = "all rows" if self.row_ids is None else f"{len(self.row_ids)} rows"
            raise ValueError(f"{source} holds {saved} of the embedding, this run trains {mine} (tuning.embedding_rows changed?)")
        for i, p in enumerate(self.row_params):
            idx = self._index(p)
            saved = rows[f"rows.{i}"]
            if saved.shape != p[idx].shape:
                raise ValueError(f"{source}: rows.{i} has shape {tuple(saved.shape)}, the model's has {tuple(p[idx].shape)}")
            p[idx] = saved.to(p.device, p.dtype)

    def merged(self, dtype: torch.dtype | None = None) -> torch.nn.Module:
        """The plain transformers model with LoRA merged into the base weights, cast to ``dtype``.

        The same on every back end: each trained weight (adapters, embedding matrices) first
        takes its fp32 value — itself without DeepSpeed, DeepSpeed's fp32 master copy under ZeRO
        (``deepspeed.utils.safe_get_full_fp32_param``; the module holds a bf16 rounding of it) —
        then PEFT adds each adapter's fp32 delta once into its base weight
        (peft/tuners/lora/layer.py: ``Linear.merge``, ``base_layer.weight.data += delta``) and
        the whole model is cast to ``dtype``. Before, ZeRO-2 merged bf16 adapters into bf16
        weights while DDP merged in fp32. Collective under ZeRO: every rank calls it."""
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        model = self.model
        if self.method == "lora":
            _trained_in_fp32(self.model)
            model = self.model.merge_and_unload()
        return model.to(dtype) if dtype is not None else model


@torch.no_grad()
def _trained_in_fp32(model: torch.nn.Module) -> None:
    """Every trainable parameter of ``model`` set to its fp32 value (see ``Trainable.merged``)."""
    for p in model.parameters():
        if not p.requires_grad:
            continue
        master = None
        if hasattr(p, "ds_id") or hasattr(p, "_hp_mapping"):  # DeepSpeed's (deepspeed/utils/tensor_fragment.py)
            from deepspeed.utils import safe_get_full_fp32_param

            master = safe_get_full_fp32_param(p)
        p.data = (master if master is not None else p.data).detach().to(p.device, torch.float32).reshape(p.shape)


def upcast_trainable(model: torch.nn.Module) -> int:
    """Trainable parameters loaded in bf16/fp16 (LoRA over a bf16 base without DeepSpeed:
    ``trainer.master_weights``) turned fp32, in place — a tied embedding stays one parameter.
    Returns how many were cast."""
    cast = [p for p in model.parameters() if p.requires_grad and p.dtype != torch.float32]
    for p in cast:
        p.data = p.data.float()
    return len(cast)


def lora_targets(model, target_modules: str) -> str | list[str]:
    """PEFT's ``target_modules``; ``all-linear`` becomes the linear layers of the language model
    only. PEFT's own ``all-linear`` takes every ``nn.Linear`` but the LM head
    (peft/tuners/tuners_utils.py: ``_maybe_include_all_linear_layers``), a multimodal
    checkpoint's vision tower and projector included (Gemma-3 4B/12B load as
    ``Gemma3ForConditionalGeneration``): text-only training gives those adapters no gradient, and
    DDP with ``ddp_find_unused_parameters=False`` (``trainer.sft_config`` under LoRA) raises on
    them. The language model is ``model.get_decoder()`` (transformers' ``get_decoder``: the
    ``language_model`` of a multimodal model, the decoder stack of a text-only one)."""
    if target_modules != "all-linear" or not hasattr(model, "get_decoder"):
        return target_modules
    inside = {id(m) for m in model.get_decoder().modules()}
    head = model.get_output_embeddings()
    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and id(m) in inside and m is not head]
    left = sum(isinstance(m, torch.nn.Linear) and id(m) not in inside and m is not head for m in model.modules())
    if left:
        log.info("LoRA all-linear: %d linear layers of the language model; %d outside it (vision tower, projector) left out",
                 len(names), left)
    return names or target_modules


def _row_mask_hook(n_rows: int, ids: list[int]):
    mask = torch.zeros(n_rows, 1)
    mask[ids] = 1.0

    def hook(grad: torch.Tensor) -> torch.Tensor:
        return grad * mask.to(grad.device, grad.dtype)

    return hook


def prepare_trainable(model, tuning: TuningConfig, virtual_ids: list[int], upcast: bool = False) -> Trainable:
    """LoRA (r, alpha, dropout on ``target_modules``: :func:`lora_targets`) with the embedding
    matrices trainable — all rows, or gradient-masked to the virtual-token rows
    (``tuning.embedding_rows``) — or full fine-tuning. Tying is checked to survive. ``upcast``:
    what trains is made fp32 (:func:`upcast_trainable`; without DeepSpeed, over a bf16 base)."""
    tied = embeddings_tied(model)
    if tuning.method == "full":
        for p in model.parameters():
            p.requires_grad_(True)
        return Trainable(model, "full", list(virtual_ids))
    from peft import LoraConfig, get_peft_model

    lcfg = LoraConfig(
        r=tuning.r, lora_alpha=tuning.alpha, lora_dropout=tuning.dropout, target_modules=lora_targets(model, tuning.target_modules),
        task_type="CAUSAL_LM", bias="none",
    )
    peft_model = get_peft_model(model, lcfg)
    # The embedding matrices go into every checkpoint once, as embedding_rows.pt (the trained rows:
    # all of them, or the virtual ones). PEFT's default ("auto": the vocabulary was resized) also
    # writes the whole matrices into adapter_model.safetensors, the tied head as a second copy:
    # 2 x 2.9 GB more per checkpoint at 8B. A resumed stage restores the rows from our file.
    peft_model.save_pretrained = functools.partial(peft_model.save_pretrained, save_embedding_layers=False)
    base = peft_model.get_base_model()
    rows = [base.get_input_embeddings().weight]
    if not tied and base.get_output_embeddings() is not None:
        rows.append(base.get_output_embeddings().weight)
    masked = tuning.embedding_rows == "virtual"
    hooks = []
    for p in rows:
        p.requires_grad_(True)
        if masked:
            hooks.append(p.register_hook(_row_mask_hook(p.shape[0], list(virtual_ids))))
    if upcast:
        upcast_trainable(peft_model)
    if tied and not embeddings_tied(base):
        raise RuntimeError("applying LoRA untied the input and output embeddings")
    n_train = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    what = f"{len(virtual_ids)} virtual-token rows" if masked else f"all {rows[0].shape[0]} rows"
    log.info("LoRA r=%d alpha=%d on %s; embedding: %s trainable (%s); %.2fM trainable parameters",
             tuning.r, tuning.alpha, tuning.target_modules, what, "tied" if tied else "untied", n_train / 1e6)
    return Trainable(peft_model, "lora", list(virtual_ids), rows, list(virtual_ids) if masked else None, hooks)


def no_decay_parameter_names(model) -> set[str]:
    """Names of the embedding / LM-head matrices, which get no weight decay (see the module doc)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    targets = {id(base.get_input_embeddings().weight)}
    if base.get_output_embeddings() is not None:
        targets.add(id(base.get_output_embeddings().weight))
    return {n for n, p in model.named_parameters() if id(p) in targets}
