"""Coverage: which test items have a gold tool that Stage 2 of the evaluated run trained on.

A trained model can only be expected to retrieve a tool that its retrieval fine-tuning showed
it; a benchmark whose gold tools Stage 2 never saw measures something else (App. E trained on
the demo's short split: 95 of 126 tools, the gold of 22 of the 54 realistic test queries). So
every evaluation of a trained run records, per item, ``covered`` (every gold tool is a Stage-2 tool)
and ``covered_any`` (one is), and, in results.json, ``coverage`` = ``{covered, covered_any, n, fraction,
trained_tools}``. (Before 2026-12-03 ``covered`` meant "any"; study/coverage.py recomputes such rows.)

The Stage-2 tools are rebuilt from the run's saved ``config.yaml`` — its ``stage2.sources``
through the query-source registry (``data/sources.py: QUERY_SOURCES``), the first
``stage2.max_queries``, gold tools kept only where the run's index has them (``retrieval_examples``
drops the others) — so it needs no training code and works for runs trained before coverage
was recorded. An untrained model or a baseline has no Stage 2: coverage is not applicable
(``None``). For a ``stage1`` checkpoint the flag says which items this run's Stage 2 covers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Optional, Sequence

from toolsense.catalog import Query
from toolsense.data.sources import QUERY_SOURCES, QuerySource
from toolsense.utils.config import to_config
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
