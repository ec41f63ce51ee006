"""hier_next: the tool's text and its path prefix in, the next level's token out — one example
per depth, so each level of a hierarchical index is learnt as its own decision."""

from __future__ import annotations

from toolsense.data.examples import Example
from toolsense.data.memorization.base import register, user_messages


@register("hier_next", "chooses the next level's token given a tool's text and its path so far", hierarchical=True)
def build(catalog, index, cfg) -> list[Example]:
    out = []
    for t in catalog:
        path = index.paths[t.name]
        msgs = user_messages(cfg.hier_next_template.format(tool_text=t.text()), cfg)
        for d in range(len(path)):
            out.append(
                Example(msgs, path[d], "hier_next", t.name, assistant_prefix="".join(path[:d]), eos=d == len(path) - 1, meta={"depth": d})
            )
    return out
