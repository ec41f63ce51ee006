"""Coverage: which test items have a gold tool that Stage 2 of the evaluated run trained on.

A trained model can only be expected to retrieve a tool that its retrieval fine-tuning showed
it; a benchmark whose gold tools Stage 2 never saw measures something else (App. E trained on
the demo's short split: 95 of 126 tools, the gold of 22 of the 54 realistic test queries). So
every evaluation of a trained run records, per item, ``covered`` (every gold tool is a Stage-2 tool)
and ``covered_any`` (one is), and, in results.json, ``coverage`` = ``{covered, covered_any, n, fraction,
trained_tools}``. (Before 2026-12-03 ``covered`` meant "any"; :func:`item_coverage` recomputes such rows.)

The Stage-2 tools are rebuilt from the run's saved ``config.yaml`` — its ``stage2.sources``
through the query-source registry (``data/sources.py: QUERY_SOURCES``), the first
``stage2.max_queries``, gold tools kept only where the run's index has them (``retrieval_examples``
drops the others) — so it needs no training code and works for runs trained before coverage
was recorded. An untrained model or a baseline has no Stage 2: coverage is not applicable
(``None``). For a ``stage1`` checkpoint the flag says which items this run's Stage 2 covers.

Read back (the study's findings): :func:`item_coverage` gives a results file's per-item flags, from
its samples where they were recorded, else post hoc from the run's ``config.yaml`` and
``index.json`` (the shipped archives' older rows), so two runs whose Stage-2 data cover different
tools are compared on the items both cover.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Optional, Sequence

from toolsense.catalog import Query
from toolsense.data.sources import QUERY_SOURCES, QuerySource
from toolsense.utils.config import to_config
from toolsense.utils.io import DataError
from toolsense.utils.paths import local_path
from toolsense.utils.rundir import RunDir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stage2Tools:
    """The tools Stage 2 of a run trained on, and where that was read from."""

    tools: frozenset[str]
    sources: list[dict[str, Any]]
    """The run's ``stage2.sources`` as saved (for results.json)."""
    enabled: bool = True


def stage2_tools(run_dir: str | Path, index_tools: Collection[str]) -> Optional[Stage2Tools]:
    """The gold tools of the run's Stage-2 queries that its index holds (``index_tools``), or
    None when its config has no ``stage2`` section (a run directory not written by train.py).
    ``stage2.enabled: false`` trains nothing: an empty set. A source that cannot be read
    (moved data) raises naming the config file and the source."""
    rd = RunDir(run_dir)
    raw = rd.config().get("stage2")
    if not isinstance(raw, dict):
        log.info("%s has no stage2 section: coverage not recorded", rd.config_path)
        return None
    where = f"{rd.config_path}: stage2"
    sources = [to_config(QuerySource, {**s, "path": local_path(s.get("path"))}, f"{where}.sources[{i}]", ignore_unknown=True)
               for i, s in enumerate(raw.get("sources") or [])]  # an archived config's paths are portable (utils.paths)
    if raw.get("enabled", True) is False:
        return Stage2Tools(frozenset(), list(raw.get("sources") or []), enabled=False)
    queries: list[Query] = []
    for i, src in enumerate(sources):
        try:
            queries += QUERY_SOURCES.get(src.kind)(src)
        except (OSError, ValueError) as e:
            raise type(e)(f"{where}.sources[{i}] (kind {src.kind}): cannot rebuild the Stage-2 queries for "
                          f"coverage: {e}") from None
    max_queries = int(raw.get("max_queries", -1) or -1)
    if max_queries > 0:
        queries = queries[:max_queries]
    known = set(index_tools)
    return Stage2Tools(frozenset(t for q in queries for t in q.tools if t in known), list(raw.get("sources") or []))


def is_covered(gold: Sequence[str], trained: Optional[Stage2Tools]) -> Optional[bool]:
    """Whether Stage 2 trained on every gold tool of one item; None when not applicable."""
    return None if trained is None else all(t in trained.tools for t in gold)


def is_covered_any(gold: Sequence[str], trained: Optional[Stage2Tools]) -> Optional[bool]:
    return None if trained is None else any(t in trained.tools for t in gold)  # one gold tool trained (None: n/a)


def coverage_summary(golds: Sequence[Sequence[str]], trained: Optional[Stage2Tools]) -> Optional[dict[str, Any]]:
    """results.json's ``coverage`` over the scored items' gold sets: ``covered`` items (every gold
    tool trained) and ``covered_any`` (one) of ``n``,
    their ``fraction``, how many tools Stage 2 trained on; None when not applicable."""
    if trained is None:
        return None
    n = len(golds)
    covered = sum(bool(is_covered(g, trained)) for g in golds)
    return {"covered": covered, "covered_any": sum(bool(is_covered_any(g, trained)) for g in golds), "n": n,
            "fraction": covered / n if n else None, "trained_tools": len(trained.tools),
            "stage2_enabled": trained.enabled}


@functools.lru_cache(maxsize=None)
def trained_tools(run: str) -> frozenset[str] | None:
    """The tools Stage 2 of ``run`` trained on (:func:`stage2_tools`, the one
    rebuild of a run's Stage-2 tools, restricted to the tools of the run's index.json); None
    when the run has no config.yaml or index.json."""
    index = Path(run) / "index.json"
    if not (Path(run) / "config.yaml").is_file() or not index.is_file():
        return None
    try:
        names = [t["name"] for t in json.loads(index.read_text(encoding="utf-8"))["tools"]]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise DataError(f"{index}: not a tool index ({e})") from None
    found = stage2_tools(run, names)
    return None if found is None else found.tools


def _run_of(result_path: Path) -> Path | None:
    """The run a results file lies in (its nearest ancestor holding a config.yaml)."""
    return next((p for p in result_path.parents if (p / "config.yaml").is_file()), None)


@functools.lru_cache(maxsize=None)
def item_coverage(result_path: str, rule: str = "all") -> dict[str, bool] | None:
    """item id -> whether every gold tool of the item (``rule="any"``: one) was trained on in Stage
    2, for the samples beside ``result_path``: the recorded ``covered`` / ``covered_any`` flags where
    the evaluation wrote both, else post hoc from the run's Stage-2 sources (rows of before
    2026-12-03 hold ``covered`` in the "any" sense only). None without samples or a known Stage 2."""
    if rule not in ("all", "any"):
        raise ValueError(f"coverage rule must be 'all' or 'any', got {rule!r}")
    samples = Path(result_path).with_name("samples.jsonl")
    if not samples.is_file():
        return None
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.strip()]
    key = "covered" if rule == "all" else "covered_any"
    if rows and all("covered_any" in r for r in rows):
        return {str(r["item_id"]): bool(r[key]) for r in rows}
    old = rows and all("covered" in r and r["covered"] is not None for r in rows)
    if old and (rule == "any" or all(not r["covered"] or len(r.get("gold") or ()) == 1 for r in rows)):
        return {str(r["item_id"]): bool(r["covered"]) for r in rows}  # "any" and "all" agree on these rows
    run = _run_of(Path(result_path))
    tools = trained_tools(str(run)) if run else None
    if tools is None:
        return None
    test = all if rule == "all" else any
    return {str(r["item_id"]): bool(r.get("gold")) and test(g in tools for g in r["gold"]) for r in rows}
