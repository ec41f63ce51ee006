"""The scorer prompt and its answer parser: one place, so the LoRA fine-tune and every scored
variant (original and redacted) see exactly the same wording."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from toolsense.audit.traces import TraceRecord
from toolsense.utils.registry import Registry

PARSERS: Registry[Callable[[str], Optional[float]]] = Registry("answer parser")


@PARSERS.register("answer_1_10")
def parse_answer_1_10(text: str) -> Optional[float]:
    """An integer 1-10 inside ``<answer>...</answer>`` mapped to (a - 1) / 9; None otherwise."""
    m = re.search(r"<answer>\s*(\d{1,2})\s*</answer>", text)
    if not m or not 1 <= int(m.group(1)) <= 10:
        return None
    return (int(m.group(1)) - 1) / 9


@PARSERS.register("answer_prob")
def parse_answer_prob(text: str) -> Optional[float]:
    """A probability in [0, 1] inside ``<answer>...</answer>``; None otherwise."""
    m = re.search(r"<answer>\s*([01](?:\.\d+)?|\.\d+)\s*</answer>", text)
    if not m or not 0.0 <= float(m.group(1)) <= 1.0:
        return None
    return float(m.group(1))


@dataclass(frozen=True)
class AnswerChoices:
    """How a scorer that reads answer probabilities (``scorer.method=answer_probs``) scores a
    parser's format. After the assistant turn opens with ``prefix``, each key of ``values`` is
    one complete answer: its tokens followed by the first token of ``suffix``. A key may take
    several tokens and share its first ones with another ("1" and "10"): the scorer scores each
    answer by its sequence probability under decoding constrained to the answers (see
    ``toolsense.audit.scorers.hf``), so "10" is never read as 1."""

    prefix: str
    suffix: str
    values: dict[str, float]


ANSWER_CHOICES: dict[str, AnswerChoices] = {
    "answer_1_10": AnswerChoices("<answer>", "</answer>", {str(d): (d - 1) / 9 for d in range(1, 11)}),
}


@dataclass
class AuditPromptConfig:
    system: Optional[str] = "Rate builds."
    """System message; None sends none (the chat template may add its own default)."""
    template: str = "{question}\n{trace}\nReply <answer>N</answer> with N from 1 to 10."
    """User turn. ``{trace}`` is the serialized tool results; ``{<field>}`` any prompt field."""
    section_template: str = "[{tool}] {text}"
    """How one tool result is serialized into ``{trace}``."""
    empty_section: str = "(no output)"
    """Shown for a tool result whose text is empty."""
    parser: str = "answer_1_10"
    """Registered answer parser (answer_1_10 | answer_prob)."""

    def __post_init__(self) -> None:
        PARSERS.get(self.parser)
        if "{trace}" not in self.template:
            raise ValueError("prompt.template must contain {trace}")


def render_trace(rec: TraceRecord, cfg: AuditPromptConfig) -> str:
    return "\n".join(cfg.section_template.format(tool=r.tool, text=r.text if r.text.strip() else cfg.empty_section)
                     for r in rec.results)


def build_messages(rec: TraceRecord, cfg: AuditPromptConfig) -> list[dict]:
    try:
        user = cfg.template.format(trace=render_trace(rec, cfg), **rec.fields)
    except KeyError as e:
        raise KeyError(f"prompt.template uses {{{e.args[0]}}} but data.prompt_fields has only {sorted(rec.fields)}") from None
    msgs = [{"role": "user", "content": user}]
    if cfg.system:
        msgs.insert(0, {"role": "system", "content": cfg.system})
    return msgs


def answer_text(label: int, positive: int = 9, negative: int = 2) -> str:
    """The assistant answer the fine-tune teaches for a label (parsed back by answer_1_10)."""
    return f"<answer>{positive if label else negative}</answer>"
