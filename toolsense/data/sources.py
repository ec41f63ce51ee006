"""Stage-2 query sources: the demo queries, ToolBench / StableToolBench query files, ToolGen's
retrieval JSON, our own JSONL ``{query, tools}``, and generated realistic queries (same JSONL)."""

from __future__ import annotations

import dataclasses
import glob
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from toolsense.catalog import Query, load_demo_queries, load_query_jsonl, load_toolbench_queries
from toolsense.catalog.loaders import DEMO_DIR
from toolsense.catalog.tool import canonical_name
from toolsense.data import realistic
from toolsense.data.leakage import QuerySet
from toolsense.data.verbose import SPLITS, ensure_written, load_verbose
from toolsense.utils.errors import ConfigError, MissingFile
from toolsense.utils.io import DataError, load_json
from toolsense.utils.registry import Registry

log = logging.getLogger(__name__)
QUERY_SOURCES: Registry[Callable[["QuerySource"], list[Query]]] = Registry("stage-2 query source")


@dataclass
class QuerySource:
    kind: str = "demo"
    """A name from the QUERY_SOURCES registry. demo: the demo catalog's queries; toolbench: ToolBench query JSON; toolgen: ToolGen
    retrieval JSON (``conversations``); jsonl / generated: our ``{query, tools}`` JSONL; verbose: template-written
    ToolBench-style queries of the catalog file ``path`` (data/verbose.py; verbose_v3: version 3, naming calibrated to
    the catalog); realistic_template: template-written
    realistic-style queries of the catalog file ``path`` (data/realistic.py)."""
    path: Optional[str] = None
    """File or glob; demo: a query file of the demo folder by name (None = queries.jsonl;
    short_train_extra.jsonl completes the short training split to every tool, for App. E)."""
    split: Optional[str] = "train"
    """demo / jsonl: keep only queries of this split; None keeps all."""
    style: Optional[str] = None
    """demo / jsonl: keep only this style (verbose | short); None keeps all."""

    def __post_init__(self) -> None:
        self.kind = QUERY_SOURCES.check(self.kind, "stage2.sources.kind")


def _paths(src: QuerySource) -> list[str]:
    if not src.path:
        raise ConfigError(f"stage2.sources: a {str(src.kind)!r} source needs a path")
    found = sorted(glob.glob(src.path)) if any(c in src.path for c in "*?[") else [src.path]
    if not found:
        raise MissingFile(f"stage2.sources: no file matches {src.path!r}")
    return found


@QUERY_SOURCES.register("demo")
def _demo(src: QuerySource) -> list[Query]:
    return load_demo_queries(split=src.split, style=src.style, file=src.path or "queries.jsonl")


def source_files(src: QuerySource) -> list[str]:
    """The files a source reads (what a leakage message names)."""
    if src.kind in VERBOSE_VERSIONS:
        return [str(ensure_written(src.path, version=VERBOSE_VERSIONS[src.kind]))]
    if src.kind == "realistic_template":
        return [str(realistic.ensure_written(src.path))]
    return [str(DEMO_DIR / (src.path or "queries.jsonl"))] if src.kind == "demo" else _paths(src)


VERBOSE_VERSIONS = {"verbose": 2, "verbose_v3": 3}
"""A template-written verbose source kind -> its generator version (data/verbose.py)."""


@QUERY_SOURCES.register("verbose")
def _verbose(src: QuerySource) -> list[Query]:
    """Template-written ToolBench-style queries of the catalog file ``path`` (None = the demo
    catalog), split train / dev / test (data/verbose.py); ``style`` does not apply."""
    return load_verbose(src.path, src.split, version=VERBOSE_VERSIONS["verbose"])


@QUERY_SOURCES.register("verbose_v3")
def _verbose_v3(src: QuerySource) -> list[Query]:
    """``verbose`` of generator version 3: the naming draw calibrated to the catalog so that the
    queries *measure* ToolBench's naming rates (data/verbose.py :func:`calibrate`)."""
    return load_verbose(src.path, src.split, version=VERBOSE_VERSIONS["verbose_v3"])


@QUERY_SOURCES.register("realistic_template")
def _realistic_template(src: QuerySource) -> list[Query]:
    """Template-written realistic-style queries of the catalog file ``path`` (None = the demo
    catalog), 2 per tool (data/realistic.py; App. E's stand-in, not an LLM's queries)."""
    return realistic.load_realistic(src.path)


@QUERY_SOURCES.register("toolbench")
def _toolbench(src: QuerySource) -> list[Query]:
    return [q for p in _paths(src) for q in load_toolbench_queries(p)]


def _jsonl(src: QuerySource) -> list[Query]:
    qs = [q for p in _paths(src) for q in load_query_jsonl(p, split=src.split)]
    return [q for q in qs if src.style is None or q.style == src.style]


QUERY_SOURCES.register("jsonl")(_jsonl)


@QUERY_SOURCES.register("generated")
def _generated(src: QuerySource) -> list[Query]:
    """Our JSONL, from ``generate.py``. A file generated with ``purpose=benchmark`` had no
    leakage guard (its items may share gold tools and queries with evaluation benchmarks):
    warn, naming the file and the fix."""
    for p in _paths(src):
        ident = Path(p).parent / "generation_config.json"
        purpose = load_json(ident).get("config", {}).get("purpose") if ident.exists() else None
        if purpose not in (None, "training"):
            log.warning("%s was generated with purpose=%s: no leakage guard kept evaluation benchmarks out of it; "
                        "regenerate with purpose=training exclude=[<benchmark files>] for Stage-2 data", p, purpose)
    return _jsonl(src)


def _turns(conv: Any, where: str) -> list[tuple[str, str]]:
    if not isinstance(conv, list):
        raise DataError(f"{where}: field 'conversations' must be a list of turns")
    out = []
    for j, turn in enumerate(conv):
        role = turn.get("role", turn.get("from")) if isinstance(turn, dict) else None
        text = turn.get("content", turn.get("value")) if isinstance(turn, dict) else None
        if not isinstance(role, str) or not isinstance(text, str):
            raise DataError(f"{where}: field 'conversations[{j}]' needs role/content (or from/value) strings")
        out.append(({"human": "user", "gpt": "assistant"}.get(role, role), text))
    return out


def load_toolgen_retrieval(path: str | Path) -> list[Query]:
    """ToolGen's retrieval data: a JSON list of ``{conversations: [..., user query, assistant
    "<<Service&&API>>"]}``; the last user turn is the query, the assistant turn its gold token."""
    data = load_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of items with 'conversations'")
    out = []
    for i, item in enumerate(data, 1):
        where = f"{path}: item {i}"
        turns = _turns(item.get("conversations") if isinstance(item, dict) else None, where)
        users = [t for r, t in turns if r == "user"]
        answers = [t.strip() for r, t in turns if r == "assistant"]
        if not users or not answers:
            raise DataError(f"{where}: field 'conversations' needs a user turn and an assistant turn")
        ans = answers[-1]
        if not (ans.startswith("<<") and ans.endswith(">>") and "&&" in ans):
            raise DataError(f"{where}: assistant answer {ans[:60]!r} is not a <<Service&&API>> token")
        qid = str(item.get("id", item.get("query_id", i)))
        out.append(Query(qid, users[-1].strip(), (canonical_name(ans[2:-2]),), "verbose", "train"))
    return out


@QUERY_SOURCES.register("toolgen")
def _toolgen(src: QuerySource) -> list[Query]:
    return [q for p in _paths(src) for q in load_toolgen_retrieval(p)]


def load_queries(sources: list[QuerySource]) -> list[Query]:
    return [q for src in sources for q in QUERY_SOURCES.get(src.kind)(src)]


def load_query_sets(sources: list[QuerySource]) -> list[QuerySet]:
    """Each source's queries with its files, named ``stage2.sources.<i>`` (for leakage checks)."""
    for i, src in enumerate(sources):
        if src.kind not in ("demo", "verbose", "realistic_template") and (not src.path or src.path == "???"):
            raise ConfigError(f"stage2.sources.{i}.path is required for a {str(src.kind)!r} source: point it at a training "
                              f"query file (not the test queries of a benchmark the run is evaluated on), e.g. "
                              f"stage2.sources.{i}.path=/data/{src.kind}/train.json")
    return [QuerySet(f"stage2.sources.{i}", tuple(files := source_files(src)), checked_queries(src, f"stage2.sources.{i}", files))
            for i, src in enumerate(sources)]


def checked_queries(src: QuerySource, where: str, files: list[str]) -> list[Query]:
    """``src``'s queries, refused when there are none (before Stage 1 trains): a split or style that matches no query
    is named as ``<where>.split`` / ``<where>.style`` with the values its files hold; else the files are named."""
    if src.kind in VERBOSE_VERSIONS and src.split is not None and src.split not in SPLITS:
        raise ConfigError(f"{where}.split={src.split!r}: a {src.kind} source has splits {list(SPLITS)}, or null (all)")
    queries = QUERY_SOURCES.get(src.kind)(src)
    if queries:
        return queries
    every = QUERY_SOURCES.get(src.kind)(dataclasses.replace(src, split=None, style=None)) if src.split or src.style else []
    for key in ("split", "style"):
        value, held = getattr(src, key), sorted({str(getattr(q, key)) for q in every})
        if value is not None and value not in held:
            raise ConfigError(f"{where}.{key}={value!r} matches no query of {', '.join(files)}: choose from {held}, "
                             f"or null (all)")
    if every:
        raise ConfigError(f"{where}: no query of {', '.join(files)} has split={src.split!r} and style={src.style!r}")
    raise DataError(f"{where}: {', '.join(files)} holds no queries (kind {src.kind}); Stage 2 would train on nothing")
