"""Coverage of a run's test items: which items have a gold tool that the run's Stage 2 trained on.

A model cannot retrieve from a query a tool it never saw a query for, so comparing two runs whose
Stage-2 data cover different tools compares their data, not their training. An evaluation that
records coverage per item (``covered`` in samples.jsonl) is read as it is; for results written
before that, coverage is computed post hoc from the run's ``config.yaml`` (its ``stage2.sources``,
loaded through the Stage-2 query-source registry, data/sources.py) and each item's gold tools.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import yaml

from toolsense.data.sources import QUERY_SOURCES, QuerySource
from toolsense.utils.io import DataError


@functools.lru_cache(maxsize=None)
def trained_tools(run: str) -> frozenset[str] | None:
    """The gold tools of every Stage-2 query of ``run`` (its config.yaml's ``stage2.sources``);
    None when the run has no config.yaml or no Stage 2."""
    path = Path(run) / "config.yaml"
    if not path.is_file():
        return None
    cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    stage2 = cfg.get("stage2") or {}
    if not stage2.get("enabled", True) or not stage2.get("sources"):
        return None
    tools: set[str] = set()
    for i, raw in enumerate(stage2["sources"]):
        try:
            src = QuerySource(**raw)
        except TypeError as e:
            raise DataError(f"{path}: stage2.sources[{i}] is not a query source ({e})") from None
        for q in QUERY_SOURCES.get(src.kind)(src):
            tools.update(q.tools)
    return frozenset(tools)


def _run_of(result_path: Path) -> Path | None:
    """The run a results file lies in (its nearest ancestor holding a config.yaml)."""
    return next((p for p in result_path.parents if (p / "config.yaml").is_file()), None)


@functools.lru_cache(maxsize=None)
def item_coverage(result_path: str) -> dict[str, bool] | None:
    """item id -> whether a gold tool of the item was trained on in Stage 2, for the samples
    beside ``result_path``: the recorded ``covered`` flag where the evaluation wrote one, else
    post hoc from the run's Stage-2 sources. None without samples or without a known Stage 2."""
    samples = Path(result_path).with_name("samples.jsonl")
    if not samples.is_file():
        return None
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.strip()]
    if rows and all("covered" in r for r in rows):
        return {str(r["item_id"]): bool(r["covered"]) for r in rows}
    run = _run_of(Path(result_path))
    tools = trained_tools(str(run)) if run else None
    if tools is None:
        return None
    return {str(r["item_id"]): any(g in tools for g in r.get("gold") or ()) for r in rows}
