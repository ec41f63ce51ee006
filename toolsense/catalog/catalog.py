"""An ordered tool catalog indexed by canonical name."""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Iterator, Literal

from toolsense.catalog.tool import Tool, loose_key
from toolsense.utils.io import DataError, sha256_text
from toolsense.utils.warnings import summarise

log = logging.getLogger(__name__)

DuplicatePolicy = Literal["error", "first"]


class Catalog:
    """Tools in file order. ``catalog[name]`` looks up by canonical name.

    Build one with :meth:`from_tools`; ``sources`` gives, per tool, where it was read
    ("file:line"), so every later error can point back at the input.
    """

    def __init__(self, tools: list[Tool], sources: dict[str, str] | None = None, dropped: list[str] | None = None):
        self._tools = list(tools)
        self._by_name = {t.name: i for i, t in enumerate(self._tools)}
        if len(self._by_name) != len(self._tools):
            raise ValueError("Catalog received duplicate canonical names; use Catalog.from_tools")
        self.sources = sources or {}
        self.dropped = dropped or []  # "file:line: name (duplicate of file:line)" for each dropped record
        self.records_read = len(self._tools) + len(self.dropped)
        self.report_files: dict[str, Path] = {}  # "dropped" / "near_duplicates" -> the file listing them

    @classmethod
    def from_tools(
        cls, items: Iterable[tuple[Tool, str]], on_duplicate: DuplicatePolicy = "error"
    ) -> "Catalog":
        """Build from ``(tool, source)`` pairs; duplicates of a canonical name raise, or with
        ``on_duplicate="first"`` keep the first. Dropped records and near-duplicate names are
        each logged as one line naming a file that lists them all (``file:line`` each)."""
        if on_duplicate not in ("error", "first"):
            raise ValueError(f"on_duplicate must be 'error' or 'first', got {on_duplicate!r}")
        tools: list[Tool] = []
        sources: dict[str, str] = {}
        dropped: list[str] = []
        for tool, src in items:
            if tool.name in sources:
                msg = f"{src}: duplicate tool name {tool.name!r} (first seen at {sources[tool.name]})"
                if on_duplicate == "error":
                    raise DataError(msg + "; pass on_duplicate='first' to keep the first occurrence")
                dropped.append(msg)
                continue
            sources[tool.name] = src
            tools.append(tool)
        cat = cls(tools, sources, dropped)
        near = [" | ".join(f"{n!r} ({sources[n]})" for n in group) for group in cat.near_duplicates()]
        for key, found, what in (
            ("dropped", dropped, "duplicate tool names dropped (on_duplicate=first, the first record kept)"),
            ("near_duplicates", near, "near-duplicate tool name groups (equal up to case/whitespace/accents; kept distinct)"),
        ):
            path = summarise(log, found, what)
            if path is not None:
                cat.report_files[key] = path
        return cat

    def near_duplicates(self) -> list[list[str]]:
        """Groups of distinct canonical names equal up to case, whitespace or accents (:func:`loose_key`)."""
        groups: dict[str, list[str]] = defaultdict(list)
        for t in self._tools:
            groups[loose_key(t.name)].append(t.name)
        return [g for g in groups.values() if len(g) > 1]

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __getitem__(self, key: str | int) -> Tool:
        if isinstance(key, int):
            return self._tools[key]
        try:
            return self._tools[self._by_name[key]]
        except KeyError:
            raise KeyError(f"tool {key!r} is not in the catalog") from None

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def index_of(self, name: str) -> int:
        return self._by_name[name]

    @property
    def names(self) -> list[str]:
        return [t.name for t in self._tools]

    def services(self) -> dict[str, list[str]]:
        """Service -> its tool names, in catalog order."""
        out: dict[str, list[str]] = defaultdict(list)
        for t in self._tools:
            out[t.service].append(t.name)
        return dict(out)

    def subset(self, names: Iterable[str]) -> "Catalog":
        keep = set(names)
        return Catalog([t for t in self._tools if t.name in keep], {n: s for n, s in self.sources.items() if n in keep})

    def content_hash(self) -> str:
        """Hash of the ordered canonical names: what an index depends on. Indexes store it and
        refuse to load against a catalog with other tools or another order."""
        return sha256_text("\n".join(self.names))[:16]
