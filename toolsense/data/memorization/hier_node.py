"""hier_node: an internal node's token path in, the names of what lies below it out — the tools'
APIs when the node holds one service, else the services below it."""

from __future__ import annotations

from toolsense.data.examples import Example
from toolsense.data.memorization.base import register, user_messages


def below(catalog, tools: list[str], max_names: int) -> str:
    services = list(dict.fromkeys(catalog[n].service for n in tools))
    if len(services) == 1:
        t0 = catalog[tools[0]]
        names = [catalog[n].api_title or catalog[n].api for n in tools]
        head = f"{t0.tool_title or t0.service}: "
    else:
        names, head = services, ""
    more = ", ..." if len(names) > max_names else ""
    return head + ", ".join(names[:max_names]) + more


@register("hier_node", "lists what lies below an internal node of the hierarchy (what a prefix means)", hierarchical=True)
def build(catalog, index, cfg) -> list[Example]:
    out = []
    for node, tools in index.internal_nodes().items():
        node_text = "".join(node)
        msgs = user_messages(cfg.hier_node_template.format(node=node_text), cfg)
        out.append(Example(msgs, below(catalog, tools, cfg.hier_node_max_names), "hier_node", meta={"node": node_text}))
    return out
