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
