"""Queries with gold tools: the record shared by retrieval training and evaluation; an item a query or probe file
repeats, refused while it is read (:class:`Repeats`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from toolsense.catalog.loaders import DEMO_DIR, iter_toolbench_queries
from toolsense.catalog.tool import SEP, canonical_name
from toolsense.utils.io import DataError, iter_jsonl


@dataclass(frozen=True)
class Query:
    """A user query and the canonical names of the tools that answer it."""

    query_id: str
    text: str
    tools: tuple[str, ...]
    style: str = "verbose"  # "verbose" (ToolBench-like) | "short" (realistic)
    split: str = "test"
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def required_text(obj: dict, key: str, where: str) -> str:
    """``obj[key]`` stripped; a ``DataError`` naming ``where`` (file:line) and the field when it is
    missing, not a string, or blank."""
    val = obj.get(key)
    if not isinstance(val, str) or not val.strip():
        raise DataError(f"{where}: field {key!r} is missing or empty")
    return val.strip()


def gold_names(raw: Any, where: str, key: str) -> tuple[str, ...]:
    """Canonical tool names from a record's gold field: a name, a ``<<token>>``, a ``[service,
    api]`` pair or a ``{tool_name: ...}`` object, or a list of them (duplicates dropped, order
    kept); a ``DataError`` naming ``where`` and the field's entry otherwise."""
    if isinstance(raw, (str, dict)):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise DataError(f"{where}: field {key!r} must be a non-empty list of tools")
    names = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            name = item
        elif isinstance(item, dict) and isinstance(item.get("tool_name"), str):
            name = item["tool_name"]
        elif isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(x, str) for x in item):
            name = f"{item[0]}{SEP}{item[1]}"
        else:
            raise DataError(f"{where}: field '{key}[{i}]' is not a tool name, [service, api] pair or tool object")
        if name.startswith("<<") and name.endswith(">>"):
            name = name[2:-2]
        if SEP not in name:
            raise DataError(f"{where}: field '{key}[{i}]' ({name!r}) must look like 'Service{SEP}API'")
        names.append(canonical_name(name))
    return tuple(dict.fromkeys(names))


def iter_query_jsonl(path: str | Path) -> Iterator[tuple[str, bool, Query]]:
    """``(file:line, whether the line names its id, query)`` for each line of our JSONL format:
    ``{query, tools: [...], query_id?, style?, split?}``; a line without an id gets ``<stem>-<line>``.
    ``tools`` entries may be names, ``<<tokens>>``, ``[service, api]`` pairs or ``{tool_name: ...}`` objects."""
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        named = obj.get("query_id", obj.get("id"))
        yield where, named is not None, Query(
            query_id=str(named if named is not None else f"{Path(path).stem}-{lineno}"),
            text=required_text(obj, "query", where),
            tools=gold_names(obj.get("tools", obj.get("tool")), where, "tools"),
            style=str(obj.get("style", "verbose")),
            split=str(obj.get("split", "test")),
            meta={k: v for k, v in obj.items() if k not in {"query", "tools", "query_id", "style", "split"}},
        )


def load_query_jsonl(path: str | Path, split: str | None = None) -> list[Query]:
    """Our JSONL format (:func:`iter_query_jsonl`), only the queries of ``split`` unless it is None."""
    return [q for _, _, q in iter_query_jsonl(path) if split is None or q.split == split]


def iter_toolbench_queries_named(path: str | Path) -> Iterator[tuple[str, bool, Query]]:
    """``(where, whether the item names its query_id, query)`` of a ToolBench / StableToolBench query
    file; gold = ``relevant APIs`` ([service, api] pairs); an item without an id gets its position."""
    for i, item in iter_toolbench_queries(path):
        where = f"{path}: item {i}"
        yield where, "query_id" in item, Query(
            query_id=str(item.get("query_id", i)),
            text=required_text(item, "query", where),
            tools=gold_names(item.get("relevant APIs"), where, "relevant APIs"),
            style="verbose",
            split="test",
        )


def load_toolbench_queries(path: str | Path) -> list[Query]:
    """ToolBench / StableToolBench query file (:func:`iter_toolbench_queries_named`)."""
    return [q for _, _, q in iter_toolbench_queries_named(path)]


def load_demo_queries(split: str | None = None, style: str | None = None, file: str = "queries.jsonl") -> list[Query]:
    """Queries of the demo catalog, optionally filtered by split ("train"/"test") and style.
    ``file`` names a query file of the demo folder: ``queries.jsonl`` (train and test), or
    ``short_train_extra.jsonl`` (short training queries for the tools the short training split of
    queries.jsonl lacks; with it App. E's short split covers every demo tool, as the verbose one does)."""
    path = DEMO_DIR / file
    if Path(file).name != file or not path.is_file():
        raise DataError(f"{file!r} is not a query file of the demo folder {DEMO_DIR.name}/ "
                        f"(it holds {sorted(p.name for p in DEMO_DIR.glob('*queries*.jsonl'))})")
    qs = load_query_jsonl(path)
    return [q for q in qs if (split is None or q.split == split) and (style is None or q.style == style)]


class Repeats:
    """No item may be scored twice, and a file's loader says so while it reads, before any model
    loads: :meth:`check` refuses an item whose own id (``name``) an earlier line gave, naming the id
    and both lines. Items without an id get one made from their line, so a repeated line would be
    scored twice under two ids: those are keyed by content and a repeat is refused the same way."""

    def __init__(self) -> None:
        self.first: dict[str, str] = {}

    def check(self, where: str, name: Optional[str], *content: Any) -> None:
        if name is not None:
            first = self.first.setdefault(json.dumps(["id", name]), where)
            if first != where:
                raise DataError(f"{where}: repeated id {name!r} (first at {first}); samples.jsonl is keyed by id, so "
                                "it would be scored twice: give each item its own id")
            return
        key = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
        first = self.first.setdefault(key, where)
        if first != where:
            raise DataError(f"{where}: repeats the item at {first} (same content and neither line has an id), "
                            "so it would be scored twice; remove the repeat or give each item an 'id'")
