"""The training example shared by both stages, and its tokenization.

An :class:`Example` is a chat prompt plus a completion. Tokenization renders the prompt with
the model's chat template exactly as evaluation does (:func:`render_prompt`), appends the
completion's tokens and — for answers that end a turn — the model's EOS, and marks only the
completion for the loss. Tool tokens are added tokens, so ``"<<S&&A>>"`` is one id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from toolsense.data.prompts import render_prompt


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
    """``{input_ids, completion_mask}``; a prompt too long for ``max_length`` is cut from the left
    so the completion is always kept whole (a completion alone longer than it is cut at the end)."""
    prompt = tokenizer(ex.prompt_text(tokenizer), add_special_tokens=False)["input_ids"]
    completion = tokenizer(ex.completion, add_special_tokens=False)["input_ids"]
    if ex.eos:
        completion = completion + [tokenizer.eos_token_id]
    completion = completion[:max_length]
    keep = max_length - len(completion)
    prompt = prompt[len(prompt) - keep :] if keep > 0 else []
    return {"input_ids": prompt + completion, "completion_mask": [0] * len(prompt) + [1] * len(completion)}


def to_dataset(examples: Iterable[Example], tokenizer, max_length: int):
    """A ``datasets.Dataset`` of tokenized examples (plus ``kind``), ready for SFTTrainer."""
    from datasets import Dataset

    rows = {"input_ids": [], "completion_mask": [], "kind": []}
    for ex in examples:
        tok = tokenize_example(ex, tokenizer, max_length)
        rows["input_ids"].append(tok["input_ids"])
        rows["completion_mask"].append(tok["completion_mask"])
        rows["kind"].append(ex.kind)
    if not rows["input_ids"]:
        raise ValueError("no training examples were built")
    return Dataset.from_dict(rows)
