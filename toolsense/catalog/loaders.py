"""Loaders for the tool-catalog formats we meet: the ToolSense tool file, ToolBench /
StableToolBench ``api_list`` entries (and query files), and ToolGen virtual-token lists.

Every loader returns a :class:`Catalog`; bad input raises :class:`DataError` naming file:line
and field; duplicates follow ``on_duplicate`` (error by default) and are never dropped silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from toolsense.catalog.catalog import Catalog, DuplicatePolicy
from toolsense.catalog.tool import SEP, Parameter, Tool
from toolsense.utils.io import DataError, iter_jsonl, iter_lines, load_json
from toolsense.utils.progress import progress
from toolsense.utils.registry import Registry

DEMO_DIR = Path(__file__).parent / "demo"
BIG_FILE_BYTES = 1 << 20
"""Catalog files at least this large (1 MiB, ~2,000 tools) show a progress bar while loading."""

CATALOG_FORMATS: Registry[Callable[[Path, DuplicatePolicy], Catalog]] = Registry("catalog format")
"""``catalog.format`` names -> ``loader(path, on_duplicate)``; ``auto`` picks one by file name."""


def _with_progress(items: Iterator[tuple[Tool, str]], path: str | Path) -> Iterator[tuple[Tool, str]]:
    path = Path(path)
    big = path.is_file() and path.stat().st_size >= BIG_FILE_BYTES
    return iter(progress(items, desc=f"catalog {path.name}", unit="tool", show=big))


def _text_field(obj: dict[str, Any], key: str, where: str, required: bool = False) -> str:
    val = obj.get(key)
    if val is None:
        if required:
            raise DataError(f"{where}: missing field {key!r}")
        return ""
    if not isinstance(val, str):
        raise DataError(f"{where}: field {key!r} must be a string, got {type(val).__name__}")
    if required and not val.strip():
        raise DataError(f"{where}: field {key!r} is empty")
    return val


def _parameters(raw: Any, where: str) -> tuple[Parameter, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise DataError(f"{where}: field 'parameters' must be a list")
    out = []
    for i, p in enumerate(raw):
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise DataError(f"{where}: field 'parameters[{i}].name' is missing")
        out.append(Parameter(p["name"], str(p.get("type", "string")), bool(p.get("required", False)), str(p.get("description", ""))))
    return tuple(out)


def _tool_from_toolsense(obj: dict[str, Any], where: str) -> Tool:
    raw = _text_field(obj, "tool_name", where, required=True)
    if SEP not in raw:
        raise DataError(f"{where}: field 'tool_name' ({raw!r}) must look like 'Service{SEP}API'")
    service, _, api = raw.partition(SEP)
    if not service.strip() or not api.strip():
        raise DataError(f"{where}: field 'tool_name' ({raw!r}) has an empty service or API part")
    return Tool.from_name(
        raw,
        tool_title=_text_field(obj, "tool_title", where) or service,
        tool_description=_text_field(obj, "tool_description", where),
        api_title=_text_field(obj, "api_title", where) or api,
        api_description=_text_field(obj, "api_description", where),
        category=_text_field(obj, "category", where) or None,
        parameters=_parameters(obj.get("parameters"), where),
    )


@CATALOG_FORMATS.register("toolsense")
def load_toolsense(path: str | Path, on_duplicate: DuplicatePolicy = "error") -> Catalog:
    """ToolSense tool file: JSONL (optionally .gz), one tool per line, ``tool_name`` = ``Service&&API``."""

    def items() -> Iterator[tuple[Tool, str]]:
        for lineno, obj in iter_jsonl(path):
            where = f"{path}:{lineno}"
            yield _tool_from_toolsense(obj, where), where

    return Catalog.from_tools(_with_progress(items(), path), on_duplicate)


def tool_from_api_entry(entry: dict[str, Any], where: str) -> Tool:
    """One ToolBench / StableToolBench ``api_list`` entry (``tool_name`` is the service)."""
    service = _text_field(entry, "tool_name", where, required=True)
    api = _text_field(entry, "api_name", where, required=True)
    params = []
    for key, req in (("required_parameters", True), ("optional_parameters", False)):
        for p in entry.get(key) or []:
            if isinstance(p, dict) and "name" in p:
                params.append(Parameter(str(p["name"]), str(p.get("type", "string")), req, str(p.get("description") or "")))
    return Tool.from_name(
        f"{service}{SEP}{api}",
        tool_title=service,
        tool_description=_text_field(entry, "tool_description", where),
        api_title=api,
        api_description=_text_field(entry, "api_description", where),
        category=_text_field(entry, "category_name", where) or None,
        parameters=tuple(params),
    )


def iter_toolbench_queries(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Items of a ToolBench query file: a JSON list (or JSONL) of ``{query, query_id,
    "relevant APIs", api_list}``. Yields (1-based item number, item)."""
    path = Path(path)
    if path.suffix in (".jsonl",) or path.name.endswith(".jsonl.gz"):
        yield from iter_jsonl(path)
        return
    data = load_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of query items")
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict):
            raise DataError(f"{path}: item {i}: expected an object")
        yield i, item


def load_toolbench_api_list(paths: str | Path | Iterable[str | Path]) -> Catalog:
    """The catalog of every distinct API in the ``api_list`` of ToolBench query files.

    The same API appears in many queries' lists, so repeats of an identical entry are merged
    (that is the format, not a duplicate); two entries with the same name but different
    descriptions are an error naming both places.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    tools: list[tuple[Tool, str]] = []
    seen: dict[str, tuple[Tool, str]] = {}
    for path in paths:
        for i, item in iter_toolbench_queries(path):
            for j, entry in enumerate(item.get("api_list") or []):
                where = f"{path}: item {i}: api_list[{j}]"
                tool = tool_from_api_entry(entry, where)
                if tool.name in seen:
                    first, first_where = seen[tool.name]
                    if first.api_description != tool.api_description:
                        raise DataError(f"{where}: API {tool.name!r} differs from its entry at {first_where}")
                    continue
                seen[tool.name] = (tool, where)
                tools.append((tool, where))
    return Catalog.from_tools(tools)


@CATALOG_FORMATS.register("virtual_tokens")
def load_virtual_tokens(path: str | Path, on_duplicate: DuplicatePolicy = "error") -> Catalog:
    """A ToolGen virtual-token list: one ``<<Service&&API>>`` per line. Tokens without ``&&``
    (``<<Finish>>``) are control tokens, not tools, and are skipped by design."""

    def items() -> Iterator[tuple[Tool, str]]:
        for lineno, line in iter_lines(path):  # a byte that is not UTF-8 is named by file:line and column
            tok = line.rstrip("\r\n")
            if not tok.strip():
                continue
            where = f"{path}:{lineno}"
            if not (tok.startswith("<<") and tok.endswith(">>")):
                raise DataError(f"{where}: token {tok!r} is not of the form <<Service&&API>>")
            name = tok[2:-2]
            if SEP not in name:
                continue
            yield Tool.from_name(name), where

    return Catalog.from_tools(_with_progress(items(), path), on_duplicate)


@CATALOG_FORMATS.register("toolbench")
def _toolbench_format(path: Path, on_duplicate: DuplicatePolicy = "error") -> Catalog:
    """A ToolBench query file's ``api_list`` catalog; identical repeats are the format and merge,
    so ``on_duplicate`` does not apply."""
    return load_toolbench_api_list(path)


def load_catalog(path: str | Path, format: str = "auto", on_duplicate: DuplicatePolicy = "error") -> Catalog:
    """Load any supported catalog file; ``format="auto"`` decides from the file name
    (``.txt`` → token list, ``.json`` → ToolBench query file, else ToolSense JSONL). A file that
    yields no tool (0 bytes, blank lines only) is a :class:`DataError` naming it: training and
    evaluation both load catalogs here, so neither meets an empty one later."""
    path = Path(path)
    if format == "auto":
        name = path.name.removesuffix(".gz")
        format = "virtual_tokens" if name.endswith(".txt") else "toolbench" if name.endswith(".json") else "toolsense"
    catalog = CATALOG_FORMATS.get(CATALOG_FORMATS.check(format, "catalog.format", extra=("auto",)))(path, on_duplicate)
    if not len(catalog):
        raise DataError(f"{path}: the catalog holds no tools (the file is empty or has only blank lines, or, for a token list, "
                        f"no <<Service&&API>> token); nothing can be trained or evaluated on it")
    return catalog


def load_demo_catalog() -> Catalog:
    """The demo catalog written for this project and shipped inside the package."""
    return load_toolsense(DEMO_DIR / "tools.jsonl")
