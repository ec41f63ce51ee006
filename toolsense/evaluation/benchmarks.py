"""Benchmark loaders (a registry). Each returns a :class:`Benchmark` of retrieval queries or
probe items; bad input raises :class:`DataError` naming file:line and field.

Registered loaders:
- ``toolbench``: ToolBench / StableToolBench query files (G1/G2/G3; tier = the group), one file
  or several pooled as the paper pools them (``paths``: G1 = instruction + category + tool).
- ``rrb``: the ToolSense Realistic Retrieval Benchmark (``tool`` a dict or a list of dicts;
  ``analyzed_tools`` = the candidate pool, kept in ``meta["pool"]``; tier = ``complexity``).
- ``query_jsonl``: our query JSONL (also what the benchmark generator writes).
- ``demo``: the demo catalog's queries, filtered by split and style.
- ``mcq`` / ``qa``: the released probe formats (and the demo probes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Optional

from toolsense.catalog import Query, load_demo_queries
from toolsense.catalog.loaders import DEMO_DIR
from toolsense.catalog.queries import Repeats, gold_names, iter_query_jsonl, iter_toolbench_queries_named, required_text
from toolsense.utils.errors import ConfigError
from toolsense.utils.io import DataError, iter_jsonl, sha256_file, sha256_text
from toolsense.utils.registry import Registry

Kind = Literal["retrieval", "mcq", "qa"]


@dataclass(frozen=True)
class ProbeItem:
    """One MCQ/QA question about one tool. ``options[answer]`` is correct; options are in file
    order (correct first for MCQ, ["Yes", "No"] for QA) and shuffled at evaluation time."""

    item_id: str
    question: str
    options: tuple[str, ...]
    answer: int
    tool: str  # canonical name
    tool_record: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass
class Benchmark:
    name: str
    kind: Kind
    items: list  # list[Query] for retrieval, list[ProbeItem] for probes
    path: Optional[str] = None
    sha256: Optional[str] = None
    files: list[str] = field(default_factory=list)
    """Every file read (several for a pooled benchmark)."""
    is_sample: bool = False
    """A small sample of a released benchmark, not the benchmark (tables mark it)."""
    config: Optional["BenchmarkConfig"] = None

    def __post_init__(self) -> None:
        """Every loader's items, ids unique (a loader reading lines names them; this names the rest)."""
        ids = [getattr(it, "query_id", None) or getattr(it, "item_id", None) for it in self.items]
        if len(set(ids)) < len(ids):
            twice = next(i for n, i in enumerate(ids) if i in ids[:n])
            raise DataError(f"{self.path or ', '.join(self.files) or self.name}: repeated id {twice!r}; samples.jsonl is "
                            "keyed by id, so it would be scored twice: give each item its own id")

    def tier_of(self, item: Query) -> str:
        return str(item.meta.get("tier") or f"{len(item.tools)}-tool")


@dataclass
class BenchmarkConfig:
    loader: str = "demo"
    """Registered loader: toolbench | rrb | query_jsonl | demo | mcq | qa."""
    path: Optional[str] = None
    """Benchmark file; None for ``demo`` (and for the demo probes of ``mcq``/``qa``)."""
    label: Optional[str] = None
    """Name in tables and output folders; default: the loader and file stem."""
    split: Optional[str] = "test"
    """demo / query_jsonl only: keep this split (None = all)."""
    style: Optional[str] = None
    """demo / query_jsonl only: keep this style, verbose (standard) or short (realistic); None = all."""
    limit: Optional[int] = None
    """Keep only the first ``limit`` items (quick checks); None = all."""
    max_gold: Optional[int] = None
    """Retrieval only: keep the items with at most this many gold tools as the file gives them (1: RRB's single-gold
    items, ``realistic_single``; before ``missing`` drops any); None = all. Part of the fingerprint when set."""
    paths: Optional[list[str]] = None
    """toolbench only, instead of ``path``: query files pooled into one benchmark, as the paper
    pools ToolBench's G1 (instruction + category + tool). Ids become ``<file stem>/<query_id>``
    (unique even where files share ids) and the tier is the file stem."""
    missing: Literal["count", "drop"] = "count"
    """Gold tools absent from the system's index (or a baseline's catalog): ``count`` keeps them
    in the gold set, as misses; ``drop`` removes them from each query's gold and drops queries
    left with none. The choice and the counts go to results.json."""
    is_sample: bool = False
    """The file is a small sample of a released benchmark (also assumed for files named
    ``*_sample.jsonl``): results.json records ``is_sample`` and tables add "(sample)"."""
    requires_path: Optional[str] = None
    """Set by the configs of released benchmarks: ``path`` must then be given and point at this
    file; no bundled sample stands in for it."""

    def __post_init__(self) -> None:
        self.loader = BENCHMARKS.check(self.loader, "benchmark.loader")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"benchmark.limit must be >= 1 or null, got {self.limit}")
        if self.max_gold is not None and (self.max_gold < 1 or self.loader in ("mcq", "qa")):
            raise ValueError(f"benchmark.max_gold keeps retrieval items by their gold tools: >= 1 or null, got {self.max_gold}")
        if self.missing not in ("count", "drop"):
            raise ValueError(f"benchmark.missing must be 'count' or 'drop', got {self.missing!r}")
        if self.paths is not None:
            if self.path:
                raise ValueError("benchmark.path and benchmark.paths are exclusive; give one file or a list to pool")
            if self.loader != "toolbench" or not self.paths:
                raise ValueError(f"benchmark.paths pools ToolBench query files: needs loader 'toolbench' and a non-empty "
                                 f"list, got loader {self.loader!r} and {self.paths!r}")


BENCHMARKS: Registry[Callable[[BenchmarkConfig], Benchmark]] = Registry("benchmark loader")


def _need_path(cfg: BenchmarkConfig) -> Path:
    if not cfg.path:
        raise ConfigError(f"benchmark.path is required for loader {cfg.loader!r}")
    return Path(cfg.path)


@BENCHMARKS.register("toolbench")
def load_toolbench(cfg: BenchmarkConfig) -> Benchmark:
    """One query file (tier = its group, e.g. G1), or ``paths`` pooled: ids prefixed by the file
    stem (ToolBench's files are separate query sets; a shared id is two queries), tier = stem."""
    if cfg.paths:
        paths = [Path(p) for p in cfg.paths]
        items = [Query(f"{p.stem}/{q.query_id}", q.text, q.tools, q.style, q.split, {"tier": p.stem})
                 for p in paths for q in _toolbench_file(p)]
        name = "+".join(p.stem for p in paths)
        return Benchmark(name, "retrieval", items, None, files=[str(p) for p in paths])
    path = _need_path(cfg)
    m = re.match(r"(G\d)", path.name)
    tier = m.group(1) if m else path.stem
    items = [Query(q.query_id, q.text, q.tools, q.style, q.split, {"tier": tier}) for q in _toolbench_file(path)]
    return Benchmark(path.stem, "retrieval", items, str(path))


def _toolbench_file(path: Path) -> list[Query]:
    """One ToolBench query file's queries; a repeated item without a query_id is refused (:class:`Repeats`)."""
    repeats, out = Repeats(), []
    for where, named, q in iter_toolbench_queries_named(path):
        repeats.check(where, q.query_id if named else None, q.text, q.tools)
        out.append(q)
    return out


@BENCHMARKS.register("rrb")
def load_rrb(cfg: BenchmarkConfig) -> Benchmark:
    path = _need_path(cfg)
    items, repeats = [], Repeats()
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        gold = gold_names(obj.get("tool"), where, "tool")
        pool = gold_names(obj["analyzed_tools"], where, "analyzed_tools") if obj.get("analyzed_tools") else ()
        meta = {"tier": str(obj.get("complexity") or f"{len(gold)}-tool"), "pool": list(pool)}
        named = obj.get("sample_id", obj.get("id"))
        text = required_text(obj, "query", where)
        repeats.check(where, None if named is None else str(named), text, gold, meta)
        items.append(Query(str(named if named is not None else f"{path.stem}-{lineno}"), text, gold, "short", "test", meta))
    return Benchmark(path.stem, "retrieval", items, str(path))


@BENCHMARKS.register("query_jsonl")
def load_queries(cfg: BenchmarkConfig) -> Benchmark:
    path = _need_path(cfg)
    items, repeats = [], Repeats()
    for where, named, q in iter_query_jsonl(path):
        if (cfg.split is None or q.split == cfg.split) and (cfg.style is None or q.style == cfg.style):
            repeats.check(where, q.query_id if named else None, q.text, q.tools, q.split, q.style)
            items.append(q)
    return Benchmark(path.stem, "retrieval", items, str(path))


@BENCHMARKS.register("demo")
def load_demo(cfg: BenchmarkConfig) -> Benchmark:
    items = load_demo_queries(split=cfg.split, style=cfg.style)
    name = "demo" + (f"_{cfg.style}" if cfg.style else "")
    return Benchmark(name, "retrieval", items, str(DEMO_DIR / "queries.jsonl"))


def _mcq_options(obj: dict, where: str) -> tuple[tuple[str, ...], int]:
    wrong = obj.get("wrong_answers")
    if not isinstance(wrong, list) or len(wrong) != 3 or not all(isinstance(w, str) and w.strip() for w in wrong):
        raise DataError(f"{where}: field 'wrong_answers' must be a list of 3 non-empty strings")
    options = (required_text(obj, "correct_answer", where),) + tuple(w.strip() for w in wrong)
    if len(set(options)) != 4:
        raise DataError(f"{where}: field 'wrong_answers' repeats an option or the correct answer")
    return options, 0


def _qa_options(obj: dict, where: str) -> tuple[tuple[str, ...], int]:
    answer = obj.get("answer")
    if answer not in ("Yes", "No"):
        raise DataError(f"{where}: field 'answer' must be 'Yes' or 'No', got {answer!r}")
    return ("Yes", "No"), 0 if answer == "Yes" else 1


def _load_probe(cfg: BenchmarkConfig, kind: Kind, options_of) -> Benchmark:
    """A released-format probe file (default: the demo probes); ``options_of(obj, where)``
    gives the options (correct at the returned index) and validates them."""
    path = Path(cfg.path) if cfg.path else DEMO_DIR / f"probes_{kind}.jsonl"
    items, first, repeats = [], {}, Repeats()
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        options, answer = options_of(obj, where)
        raw = obj.get("tool")
        if not isinstance(raw, dict):
            raise DataError(f"{where}: field 'tool' must be a tool object with 'tool_name'")
        tool = gold_names(raw, where, "tool")[0]
        qid = str(obj.get("id", f"{path.stem}-{lineno}"))
        if first.setdefault(qid, lineno) != lineno:  # samples.jsonl is keyed by id: a repeat would count twice
            raise DataError(f"{where}: repeated id {qid!r} (first at line {first[qid]})")
        question = required_text(obj, "question", where)
        repeats.check(where, qid if "id" in obj else None, question, options, answer, tool)
        items.append(ProbeItem(qid, question, options, answer, tool, raw))
    return Benchmark(path.stem, kind, items, str(path))


@BENCHMARKS.register("mcq")
def load_mcq(cfg: BenchmarkConfig) -> Benchmark:
    return _load_probe(cfg, "mcq", _mcq_options)


@BENCHMARKS.register("qa")
def load_qa(cfg: BenchmarkConfig) -> Benchmark:
    return _load_probe(cfg, "qa", _qa_options)


def benchmark_sections(one: BenchmarkConfig | None, suite: Mapping[str, BenchmarkConfig]) -> dict[str, BenchmarkConfig]:
    """A config's benchmarks by label: a suite's ``benchmarks`` map, else the single ``benchmark``
    under its label ("benchmark" when it has none); empty when neither is set."""
    if suite:
        return dict(suite)
    return {one.label or "benchmark": one} if one is not None else {}


def load_benchmarks(one: BenchmarkConfig | None, suite: Mapping[str, BenchmarkConfig], probes: bool = True) -> dict[str, Benchmark]:
    """Every benchmark of a config loaded by label, each named by it (an error names ``benchmarks.<label>``, or
    ``benchmark``): the one loader of a suite; ``probes=False`` leaves the probe sets (mcq, qa) unread."""
    out = {}
    for label, bc in benchmark_sections(one, suite).items():
        if probes or bc.loader not in ("mcq", "qa"):
            out[label] = load_benchmark(bc, f"benchmarks.{label}" if suite else "benchmark")
            out[label].name = label
    return out


def load_benchmark(cfg: BenchmarkConfig, where: str = "benchmark") -> Benchmark:
    """Load with the configured loader, apply ``limit`` and ``label``, and hash the file(s).
    ``where`` is the config key of ``cfg`` (``benchmarks.<label>`` in a suite), for errors."""
    if cfg.requires_path and not cfg.path:
        raise ConfigError(f"{where}.path is required: point it at {cfg.requires_path} "
                          f"(e.g. {where}.path=/data/toolsense/{cfg.loader}.jsonl); the small sample of the "
                          f"released file is its own config, benchmark={cfg.loader}_sample")
    bench = BENCHMARKS.get(cfg.loader)(cfg)
    if cfg.max_gold is not None:
        bench.items = [q for q in bench.items if len(q.tools) <= cfg.max_gold]
    if not bench.items:
        raise DataError(f"benchmark {cfg.label or bench.name!r} ({bench.path}) has no items after filtering")
    if cfg.limit is not None:
        bench.items = bench.items[: cfg.limit]
    if cfg.label:
        bench.name = cfg.label
    bench.files = bench.files or ([bench.path] if bench.path else [])
    hashes = [sha256_file(p) for p in bench.files if Path(p).is_file()]
    if len(hashes) == 1:
        bench.sha256 = hashes[0]
    elif hashes:
        bench.sha256 = sha256_text("\n".join(f"{Path(p).name}:{h}" for p, h in zip(bench.files, hashes)))
    bench.is_sample = cfg.is_sample or any(Path(p).stem.endswith("_sample") for p in bench.files)
    bench.config = cfg
    return bench
