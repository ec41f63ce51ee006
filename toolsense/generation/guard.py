"""Leakage guard for generated *training* data: what evaluation benchmarks must not lend it.

ToolSense's realistic-query training data (App. E) stayed disjoint from the RRB it is
evaluated on. With ``purpose=training`` every file in ``exclude`` is read (RRB rows with
``tool`` dicts, or our ``{query, tools}`` JSONL) and its gold tools may be neither an anchor
nor in an answer set, and its queries (normalised) may not be written again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toolsense.catalog import load_query_jsonl
from toolsense.generation.checks import normalise


@dataclass
class HeldOut:
    tools: frozenset[str] = frozenset()
    queries: frozenset[str] = frozenset()
    files: list[str] = field(default_factory=list)

    @classmethod
    def from_files(cls, paths: list[str]) -> "HeldOut":
        qs = [q for p in paths for q in load_query_jsonl(p, split=None)]
        return cls(frozenset(n for q in qs for n in q.tools), frozenset(normalise(q.text) for q in qs), list(paths))

    def reason(self, query: str, answer: list[str]) -> str | None:
        """Why an item would leak an excluded benchmark into training data, else None."""
        shared = sorted(set(answer) & self.tools)
        if shared:
            return f"answer set holds tools of an excluded benchmark: {shared}"
        if normalise(query) in self.queries:
            return "query of an excluded benchmark"
        return None
