"""The training example shared by both stages, and its tokenization.

An :class:`Example` is a chat prompt plus a completion. Tokenization renders the prompt with
the model's chat template exactly as evaluation does (:func:`render_prompt`), appends the
completion's tokens and — for answers that end a turn — the model's EOS, and marks only the
completion for the loss. Tool tokens are added tokens, so ``"<<S&&A>>"`` is one id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable

from toolsense.data.prompts import render_prompt

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Example:
    messages: tuple[dict, ...]
    """Chat messages before the answer (system/user)."""
    completion: str
    """The text the model learns to produce."""
    kind: str
    """Which format or source built it (desc2tok, mcts, retrieval, ...)."""
    tool: str = ""
    """The tool it is about (canonical name), when there is one."""
    assistant_prefix: str = ""
    """Text already in the assistant turn before the completion (hier_next's path prefix)."""
    eos: bool = True
    """Whether the completion ends the turn (then EOS is trained too)."""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def prompt_text(self, tokenizer) -> str:
        return render_prompt(tokenizer, list(self.messages)) + self.assistant_prefix


def tokenize_example(ex: Example, tokenizer, max_length: int) -> dict:
    """``{input_ids, completion_mask, full_length}``; a prompt too long for ``max_length`` is cut from
    the left so the completion is always kept whole (a completion alone longer than it is cut at the
    end); ``full_length`` is the example's tokens before any cut."""
    prompt = tokenizer(ex.prompt_text(tokenizer), add_special_tokens=False)["input_ids"]
    completion = tokenizer(ex.completion, add_special_tokens=False)["input_ids"]
    if ex.eos:
        completion = completion + [tokenizer.eos_token_id]
    completion = completion[:max_length]
    keep = max_length - len(completion)
    full = len(prompt) + len(completion)
    prompt = prompt[len(prompt) - keep :] if keep > 0 else []
    return {"input_ids": prompt + completion, "completion_mask": [0] * len(prompt) + [1] * len(completion), "full_length": full}


def to_dataset(examples: Iterable[Example], tokenizer, max_length: int, cut: dict | None = None):
    """A ``datasets.Dataset`` of tokenized examples (plus ``kind``), ready for SFTTrainer. ``cut``
    (filled in when given): ``{examples, cut, longest}``, how many were longer than ``max_length``
    (and so cut, see :func:`tokenize_example`) and the longest one's tokens; a cut is logged."""
    from datasets import Dataset

    rows = {"input_ids": [], "completion_mask": [], "kind": []}
    counts = {"examples": 0, "cut": 0, "longest": 0, "max_length": max_length}
    for ex in examples:
        tok = tokenize_example(ex, tokenizer, max_length)
        counts["examples"] += 1
        counts["cut"] += tok["full_length"] > max_length
        counts["longest"] = max(counts["longest"], tok["full_length"])
        rows["input_ids"].append(tok["input_ids"])
        rows["completion_mask"].append(tok["completion_mask"])
        rows["kind"].append(ex.kind)
    if not rows["input_ids"]:
        raise ValueError("no training examples were built")
    if counts["cut"]:
        log.warning("%d of %d training examples are longer than trainer.max_length=%d (the longest: %d tokens): their "
                    "prompts are cut from the left; raise trainer.max_length to keep them whole",
                    counts["cut"], counts["examples"], max_length, counts["longest"])
    if cut is not None:
        cut.update(counts)
    return Dataset.from_dict(rows)
