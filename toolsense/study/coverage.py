"""Coverage of a run's test items: which items have every gold tool (or, ``rule="any"``, one) among
the tools the run's Stage 2 trained on.

A model cannot retrieve from a query a tool it never saw a query for, so comparing two runs whose
Stage-2 data cover different tools compares their data, not their training. An evaluation that
records coverage per item (``covered`` in samples.jsonl) is read as it is; for results written
before that (the shipped archive), coverage is computed post hoc from the run's ``config.yaml``
and ``index.json`` by evaluation/coverage.py's ``stage2_tools`` and each item's gold tools.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from toolsense.evaluation.coverage import stage2_tools
from toolsense.utils.io import DataError


@functools.lru_cache(maxsize=None)
def trained_tools(run: str) -> frozenset[str] | None:
    """The tools Stage 2 of ``run`` trained on (evaluation/coverage.py: stage2_tools, the one
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
