"""Wall time of a study's sweeps, read from ``<root>/timings.jsonl`` (sweeps.py appends a row as
each sweep starts and ends; the report reads it here, so the report does not import the runner)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolsense.utils.jsonl import JsonlStore

TIMINGS_FILE = "timings.jsonl"


def study_wall_time(root: str | Path) -> dict[str, float]:
    """Seconds per sweep from ``<root>/timings.jsonl``, summed over the study's invocations that
    have a time (an interrupted study resumed later adds both parts; see :func:`untimed_invocations`)."""
    out: dict[str, float] = {}
    for row in _timing_rows(root):
        if row.get("seconds") is not None:
            out[row["sweep"]] = out.get(row["sweep"], 0.0) + float(row["seconds"])
    return out


def untimed_invocations(root: str | Path) -> dict[str, dict[str, int]]:
    """Per sweep, the invocations its wall time misses or only estimates: ``missing`` started and
    never ended (killed, or still running), so their time is not counted; ``from_log`` were
    interrupted and timed afterwards from their logs' first and last timestamps (a row with
    ``interrupted: true``)."""
    rows = _timing_rows(root)
    ended = {r.get("invocation") for r in rows if r.get("seconds") is not None}
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        key = "missing" if r.get("event") == "start" and r.get("invocation") not in ended else \
            "from_log" if r.get("interrupted") and r.get("seconds") is not None else None
        if key:
            counts = out.setdefault(r["sweep"], {"missing": 0, "from_log": 0})
            counts[key] += 1
    return out


def _timing_rows(root: str | Path) -> list[dict[str, Any]]:
    path = Path(root) / TIMINGS_FILE
    return list(JsonlStore(path)) if path.exists() else []


def wall_text(total: float, untimed: dict[str, dict[str, int]] | None) -> str:
    """A report header's wall time: a lower bound where some invocation never ended (killed, or still running)."""
    missing = sum(u.get("missing", 0) for u in (untimed or {}).values())
    if not missing:
        return f"{total / 3600:.1f} h on this machine"
    return (f"at least {total / 3600:.1f} h on this machine ({missing} invocation{'s' * (missing > 1)} that did not end, "
            "killed or still running, not counted: see How the runs ran)")
