"""Stage-2 retrieval SFT examples: the query posed with the shared retrieval prompt → the gold
tool's token(s). Built with :func:`retrieval_messages`, the same prompt evaluation uses."""

from __future__ import annotations

import logging
from typing import Literal, Optional

from toolsense.catalog import Query
from toolsense.data.examples import Example
from toolsense.data.prompts import PromptConfig, retrieval_messages
from toolsense.index import ToolIndex
from toolsense.utils.errors import DataError

log = logging.getLogger(__name__)


def retrieval_examples(
    queries: list[Query],
    index: ToolIndex,
    prompts: PromptConfig,
    multi_tool: Literal["split", "joint"] = "split",
    on_unknown_tool: Literal["error", "skip"] = "error",
    skipped: Optional[list[tuple[str, str]]] = None,
) -> list[Example]:
    """``split``: a query with several gold tools gives one example per tool; ``joint``: one
    example whose completion lists all their tokens. Gold tools absent from the index raise
    (naming the query) or, with ``on_unknown_tool="skip"``, are dropped: each as a
    ``(query_id, tool)`` pair appended to ``skipped`` when given, and counted in one warning."""
    out: list[Example] = []
    dropped: list[tuple[str, str]] = []
    for q in queries:
        known = [t for t in q.tools if t in index.paths]
        if len(known) < len(q.tools):
            missing = [t for t in q.tools if t not in index.paths]
            if on_unknown_tool == "error":
                raise DataError(
                    f"stage2: query {q.query_id!r} names tools not in the catalog ({missing[:3]}); "
                    "set stage2.on_unknown_tool=skip to drop them"
                )
            dropped += [(q.query_id, t) for t in missing]
        if not known:
            continue
        msgs = tuple(retrieval_messages(q.text, prompts))
        if multi_tool == "joint":
            out.append(Example(msgs, "".join("".join(index.paths[t]) for t in known), "retrieval", known[0], meta={"query_id": q.query_id}))
        else:
            out.extend(Example(msgs, "".join(index.paths[t]), "retrieval", t, meta={"query_id": q.query_id}) for t in known)
    if dropped:
        lost = len({qid for qid, _ in dropped} - {ex.meta["query_id"] for ex in out})
        log.warning("stage2: skipped %d gold tools not in the catalog (%d distinct, e.g. %s); %d of %d queries were left with "
                    "no known tool and dropped", len(dropped), len({t for _, t in dropped}), dropped[0][1], lost, len(queries))
    if skipped is not None:
        skipped.extend(dropped)
    return out
