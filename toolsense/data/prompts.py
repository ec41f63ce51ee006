"""Prompt wording shared by Stage-2 training and retrieval evaluation, so a query is posed to
the model at test time exactly as it was in training. Wording lives in config (``prompts:``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DEFAULT_SYSTEM = (
    "You are a tool retriever. Each tool has its own special token. "
    "Answer with the token of the tool that fulfils the request."
)


@dataclass
class PromptConfig:
    system_prompt: Optional[str] = DEFAULT_SYSTEM
    """System message; None or use_system_prompt=false sends none."""
    use_system_prompt: bool = True
    retrieval_template: str = "{query}"
    """User turn for Stage-2 retrieval and evaluation; ``{query}`` is replaced by the query."""


def with_system(messages: list[dict], cfg: PromptConfig) -> list[dict]:
    """``messages`` after ``cfg``'s system message when it sends one. ``cfg`` is any config
    with ``system_prompt`` and ``use_system_prompt`` (PromptConfig, MemorizationConfig): the one
    place a system prompt is prepended, in training, evaluation and probes alike."""
    if cfg.use_system_prompt and cfg.system_prompt:
        return [{"role": "system", "content": cfg.system_prompt}] + messages
    return messages


def retrieval_messages(query: str, cfg: PromptConfig) -> list[dict]:
    """Chat messages that pose ``query`` for retrieval (no assistant turn)."""
    return with_system([{"role": "user", "content": cfg.retrieval_template.format(query=query)}], cfg)


def render_prompt(tokenizer, messages: list[dict]) -> str:
    """The chat-templated prompt text up to the start of the assistant's answer."""
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


LETTERS = "ABCDEFGH"
"""MCQ answer letters, in slot order (the probe prompts label the options shown with them)."""


def probe_answers(kind: str, n_options: int) -> list[str]:
    """The allowed answers of a probe: ``n_options`` letters (MCQ), or Yes, No (QA)."""
    return list(LETTERS[:n_options]) if kind == "mcq" else ["Yes", "No"]


PROBE_TEMPLATE_FIELDS = {"tool", "question", "options", "choices"}
"""What a probe template may use (evaluate.py's ``probe.template``)."""


def check_probe_template(template: str, modes: list[str], key: str = "probe.template") -> None:
    """Refuse a probe template that uses an unknown field or lacks {tool}, {question} or {options};
    with ``options`` among ``modes`` also one whose {tool} line holds another field (that mode drops
    the line: :func:`options_only`)."""
    import string

    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    unknown, absent = fields - PROBE_TEMPLATE_FIELDS, {"tool", "question", "options"} - fields
    if unknown or absent:
        raise ValueError(f"{key} may use {sorted(PROBE_TEMPLATE_FIELDS)} and needs {{tool}}, {{question}} and "
                         f"{{options}}; unknown {sorted(unknown)}, absent {sorted(absent)}")
    if "options" in modes:
        options_only(template, key)


def options_only(template: str, key: str = "probe.template") -> str:
    """The probe template without the line that names the tool (probe mode ``options``: the question
    and its options alone, what they give away with no tool reference at all); refused where that
    line also holds another field, since dropping it would drop the question or the options."""
    lines = template.split("\n")
    tool_lines = [ln for ln in lines if "{tool}" in ln]
    other = [f for ln in tool_lines for f in PROBE_TEMPLATE_FIELDS - {"tool"} if "{" + f + "}" in ln]
    if other:
        raise ValueError(f"{key}: probe mode 'options' drops the line holding {{tool}}, which also holds "
                         f"{{{other[0]}}}: put {{tool}} on a line of its own")
    return "\n".join(ln for ln in lines if "{tool}" not in ln)
