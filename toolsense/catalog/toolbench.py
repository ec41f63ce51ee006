"""The paper's catalog (``catalog=toolbench``): ToolGen's 46,984 tools, each with the best text
available, so the flat index is exactly ToolGen's virtual tokens and every tool has a card.

Names come from ToolGen's token list (``<<Finish>>`` left out); a tool's name *is* its token
text. Its text comes from the first source that has it, in this order:

====================  ===============================================================
``release``           the released ToolSense tool record of exactly that name
``toolenv``           the StableToolBench ToolEnv2404 record of exactly that name
``release_loose``     a release record equal up to case/whitespace/accents (one only)
``toolenv_loose``     a ToolEnv2404 record equal up to case/whitespace/accents (one only)
``toolbench_queries`` the ``api_list`` entry of a ToolBench G1/G2/G3 query file
``service``           no record of the API: the service's title/description/category
``name``              nothing known: the names only
====================  ===============================================================

A loose key shared by several records of one source is ambiguous and skipped (counted in the
coverage report). The output is deterministic: same inputs, same bytes.

``toolbench_clean`` (``catalog=toolbench_clean``) is the same catalog without the
``toolbench_queries`` source: the query files are ToolBench's *test* queries, and the 490 tools
whose text they alone supply are APIs listed in those queries' ``api_list`` (the APIs a query was
generated from and their siblings); their text falls back to ``service`` or ``name``.
docs/reference/paper_tables.md measures what this moves.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from toolsense.catalog.builders import CATALOG_BUILDERS, build_command, coverage_path
from toolsense.catalog.catalog import Catalog
from toolsense.catalog.loaders import iter_toolbench_queries, load_toolsense, load_virtual_tokens, tool_from_api_entry
from toolsense.catalog.tool import Tool, loose_key
from toolsense.utils.errors import MissingFile
from toolsense.utils.io import sha256_file, sha256_text
from toolsense.utils.paths import atomic_write_text
from toolsense.utils.progress import progress

SOURCES = ("release", "toolenv", "release_loose", "toolenv_loose", "toolbench_queries", "service", "name")
QUERY_FILES = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category", "G3_instruction")


@dataclass(frozen=True)
class ToolbenchInputs:
    """The input files under the shared data folder (see its README)."""

    tokens: Path
    release: Path
    toolenv: Path
    queries: tuple[Path, ...]

    @classmethod
    def under(cls, data_dir: str | Path) -> "ToolbenchInputs":
        d = Path(data_dir)
        queries = tuple(p for p in (d / "toolbench_queries" / f"{q}.json" for q in QUERY_FILES) if p.is_file())
        inputs = cls(d / "toolbench_virtual_tokens.txt", d / "catalogs/toolsense_release.jsonl",
                     d / "catalogs/toolenv2404.jsonl.gz", queries)
        missing = [str(p) for p in (inputs.tokens, inputs.release, inputs.toolenv) if not p.is_file()]
        if missing:
            raise MissingFile(f"catalog toolbench: input files missing under {d}: {missing}")
        return inputs

    def files(self) -> dict[str, Path]:
        return {"tokens": self.tokens, "release": self.release, "toolenv": self.toolenv,
                **{f"queries/{p.stem}": p for p in self.queries}}


@dataclass
class _Source:
    """One text source: its tools by exact name, by unambiguous loose key, and by service."""

    tools: dict[str, Tool]
    loose: dict[str, Tool] = field(default_factory=dict)
    ambiguous: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> "_Source":
        src = cls({})
        by_key: dict[str, list[Tool]] = defaultdict(list)
        for t in tools:
            src.tools.setdefault(t.name, t)
            by_key[loose_key(t.name)].append(t)
        src.loose = {k: v[0] for k, v in by_key.items() if len(v) == 1}
        src.ambiguous = {k for k, v in by_key.items() if len(v) > 1}
        return src


def _query_file_tools(paths: Iterable[Path]) -> list[Tool]:
    """Every API of the query files' ``api_list``s, the first entry of each name kept (the same
    API recurs in many queries, a few times with another description)."""
    seen: dict[str, Tool] = {}
    for path in paths:
        for i, item in iter_toolbench_queries(path):
            for j, entry in enumerate(item.get("api_list") or []):
                tool = tool_from_api_entry(entry, f"{path}: item {i}: api_list[{j}]")
                seen.setdefault(tool.name, tool)
    return list(seen.values())


def _services(sources: Iterable[_Source]) -> tuple[dict[str, Tool], dict[str, Tool]]:
    """A representative tool per service name and per loose service key, first source first."""
    exact: dict[str, Tool] = {}
    loose: dict[str, Tool] = {}
    for src in sources:
        for t in src.tools.values():
            if t.tool_description or t.category:
                exact.setdefault(t.service, t)
                loose.setdefault(loose_key(t.service), t)
    return exact, loose


def _record(name: Tool, text: Optional[Tool], source: str, service_only: bool = False) -> dict[str, Any]:
    """The ToolSense JSON line for token name ``name.name`` with ``text``'s fields."""
    rec: dict[str, Any] = {"tool_name": name.name, "source": source}
    if text is not None and text.name != name.name:
        rec["text_from"] = text.service if service_only else text.name
    rec["tool_title"] = (text.tool_title if text else "") or name.service
    rec["tool_description"] = text.tool_description if text else ""
    rec["api_title"] = name.api if service_only or text is None else (text.api_title or name.api)
    rec["api_description"] = "" if service_only or text is None else text.api_description
    if text is not None and text.category:
        rec["category"] = text.category
    if text is not None and not service_only and text.parameters:
        rec["parameters"] = [p.__dict__ for p in text.parameters]
    return rec


ORDER = (("release", "release", "exact"), ("toolenv", "toolenv", "exact"), ("release_loose", "release", "loose"),
         ("toolenv_loose", "toolenv", "loose"), ("toolbench_queries", "queries", "exact"),
         ("toolbench_queries", "queries", "loose"))
"""(label, source, match) in priority order; ``service`` and ``name`` come after."""


def _match(tool: Tool, sources: dict[str, _Source], services: tuple[dict, dict]) -> tuple[Optional[Tool], str, bool]:
    """(text record, source label, service only) for one token name, by :data:`ORDER`."""
    key = loose_key(tool.name)
    for label, source, by in ORDER:
        src = sources[source]
        hit = src.tools.get(tool.name) if by == "exact" else src.loose.get(key)
        if hit is not None:
            return hit, label, False
    svc = services[0].get(tool.service) or services[1].get(loose_key(tool.service))
    return (svc, "service", True) if svc is not None else (None, "name", False)


def match_tools(names: Catalog, release: Catalog, toolenv: Catalog,
                query_tools: list[Tool]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The JSON records (in token order) and the coverage counts."""
    sources = {"release": _Source.of(release), "toolenv": _Source.of(toolenv), "queries": _Source.of(query_tools)}
    services = _services(sources.values())
    records, counts, ambiguous = [], Counter(), 0
    for tool in progress(names, desc="catalog toolbench: matching", unit="tool", min_total=5000):
        text, label, service_only = _match(tool, sources, services)
        records.append(_record(tool, text, label, service_only))
        counts[label] += 1
        ambiguous += label in ("service", "name") and any(loose_key(tool.name) in s.ambiguous for s in sources.values())
    coverage = {"n_tools": len(records), "sources": {s: counts.get(s, 0) for s in SOURCES},
                "ambiguous_loose_matches_skipped": ambiguous}
    return records, coverage


@CATALOG_BUILDERS.register("toolbench")
def build_toolbench_catalog(data_dir: str | Path, out: str | Path, query_files: bool = True) -> dict[str, Any]:
    """Build ``out`` (ToolSense JSONL, one line per ToolGen token, token order) and
    ``out.coverage.json``; returns the coverage report (counts per source, input and output
    sha256). Both files are written atomically. ``query_files=False`` leaves the ToolBench test
    query files out of the text sources (and out of the inputs the report lists)."""
    inputs = ToolbenchInputs.under(data_dir)
    if not query_files:
        inputs = dataclasses.replace(inputs, queries=())
    out = Path(out)
    names = load_virtual_tokens(inputs.tokens)
    release = load_toolsense(inputs.release)
    toolenv = load_toolsense(inputs.toolenv, on_duplicate="first")
    records, coverage = match_tools(names, release, toolenv, _query_file_tools(inputs.queries))
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    atomic_write_text(out, text)
    coverage.update(
        output={"path": str(out), "sha256": sha256_text(text)},
        inputs={k: {"path": str(p), "sha256": sha256_file(p)} for k, p in inputs.files().items()},
        command=build_command("toolbench" if query_files else "toolbench_clean", data_dir, out),
        query_files=query_files,
    )
    atomic_write_text(coverage_path(out), json.dumps(coverage, indent=2) + "\n")
    return coverage


@CATALOG_BUILDERS.register("toolbench_clean")
def build_toolbench_clean_catalog(data_dir: str | Path, out: str | Path) -> dict[str, Any]:
    """``toolbench`` without text from the ToolBench test query files (see the module doc)."""
    return build_toolbench_catalog(data_dir, out, query_files=False)
