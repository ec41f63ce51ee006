"""tok2desc: the virtual token(s) in, the tool's description out (what the token means)."""

from __future__ import annotations

from toolsense.data.examples import Example
from toolsense.data.memorization.base import register, token_text, user_messages


@register("tok2desc", "maps a virtual token back to the tool's description (the token carries meaning)")
def build(catalog, index, cfg) -> list[Example]:
    return [
        Example(user_messages(cfg.tok2desc_template.format(token=token_text(index, t.name)), cfg), t.description(), "tok2desc", t.name)
        for t in catalog
    ]
