"""What is trainable: LoRA adapters plus the virtual-token rows, or every weight.

Why not PEFT's ``trainable_token_indices``: TRL's SFTTrainer computes the loss with a fused LM
head that multiplies hidden states by ``lm_head.weight`` directly. On a tied ``lm_head`` PEFT
wraps the head in a ``TrainableTokensWrapper`` and the fused head then fails
(``'TrainableTokensWrapper' object has no attribute 'bias'``); even where it runs, the fused head
reads the raw weight and ignores the wrapper's trainable rows on the output side. Instead we
keep the (tied) embedding matrix itself trainable and mask its gradient to the virtual-token
rows, so the input and output sides stay one tensor, the base vocabulary rows receive exactly
zero gradient, and merging leaves nothing to undo. Decoupled weight decay would still shrink
zero-gradient rows, so the trainer excludes these matrices from weight decay
(:func:`no_decay_parameter_names`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import torch

from toolsense.training.config import TuningConfig

log = logging.getLogger(__name__)


def _is_tied(model) -> bool:
    out = model.get_output_embeddings()
    return out is not None and out.weight is model.get_input_embeddings().weight


@dataclass
class Trainable:
    """The model to train and what was made trainable (for saving and for checks)."""

    model: torch.nn.Module
    method: str
    virtual_ids: list[int]
    row_params: list[torch.nn.Parameter] = field(default_factory=list)
    _hooks: list = field(default_factory=list, repr=False)

    def virtual_rows(self) -> dict[str, torch.Tensor]:
        """The virtual-token rows of the embedding (and untied output) matrices, on CPU."""
        ids = torch.tensor(self.virtual_ids)
        return {f"rows.{i}": p.detach()[ids].cpu().clone() for i, p in enumerate(self.row_params)}

    @torch.no_grad()
    def load_virtual_rows(self, rows: dict[str, torch.Tensor]) -> None:
        ids = torch.tensor(self.virtual_ids)
        for i, p in enumerate(self.row_params):
            p[ids.to(p.device)] = rows[f"rows.{i}"].to(p.device, p.dtype)

    def merged(self) -> torch.nn.Module:
        """The plain transformers model with LoRA merged into the base weights."""
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        if self.method == "lora":
            return self.model.merge_and_unload()
        return self.model


def _row_mask_hook(n_rows: int, ids: list[int]):
    mask = torch.zeros(n_rows, 1)
    mask[ids] = 1.0

    def hook(grad: torch.Tensor) -> torch.Tensor:
        return grad * mask.to(grad.device, grad.dtype)

    return hook


def prepare_trainable(model, tuning: TuningConfig, virtual_ids: list[int]) -> Trainable:
    """LoRA (r, alpha, dropout on ``target_modules``) with gradient-masked virtual-token rows,
    or full fine-tuning. Tying is checked to survive."""
    tied = _is_tied(model)
    if tuning.method == "full":
        for p in model.parameters():
            p.requires_grad_(True)
        return Trainable(model, "full", list(virtual_ids))
    from peft import LoraConfig, get_peft_model

    lcfg = LoraConfig(
        r=tuning.r, lora_alpha=tuning.alpha, lora_dropout=tuning.dropout, target_modules=tuning.target_modules,
        task_type="CAUSAL_LM", bias="none",
    )
    peft_model = get_peft_model(model, lcfg)
    base = peft_model.get_base_model()
    rows = [base.get_input_embeddings().weight]
    if not tied and base.get_output_embeddings() is not None:
        rows.append(base.get_output_embeddings().weight)
    hooks = []
    for p in rows:
        p.requires_grad_(True)
        hooks.append(p.register_hook(_row_mask_hook(p.shape[0], list(virtual_ids))))
    if tied and not _is_tied(base):
        raise RuntimeError("applying LoRA untied the input and output embeddings")
    n_train = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    log.info("LoRA r=%d alpha=%d on %s; %d virtual-token rows trainable (%s); %.2fM trainable parameters",
             tuning.r, tuning.alpha, tuning.target_modules, len(virtual_ids), "tied" if tied else "untied", n_train / 1e6)
    return Trainable(peft_model, "lora", list(virtual_ids), rows, hooks)


def no_decay_parameter_names(model) -> set[str]:
    """Names of the embedding / LM-head matrices (weight decay would move their frozen rows)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    targets = {id(base.get_input_embeddings().weight)}
    if base.get_output_embeddings() is not None:
        targets.add(id(base.get_output_embeddings().weight))
    return {n for n, p in model.named_parameters() if id(p) in targets}
