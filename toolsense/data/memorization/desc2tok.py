"""desc2tok: the tool's text in, its virtual token(s) out (ToolGen's tool memorization)."""

from __future__ import annotations

from toolsense.data.examples import Example
from toolsense.data.memorization.base import register, token_text, user_messages


@register("desc2tok", "maps a tool's description to its virtual token(s)")
def build(catalog, index, cfg) -> list[Example]:
    return [
        Example(user_messages(cfg.desc2tok_template.format(tool_text=t.text()), cfg), token_text(index, t.name), "desc2tok", t.name)
        for t in catalog
    ]
