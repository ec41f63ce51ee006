"""Wall time of a study's sweeps, read from ``<root>/timings.jsonl`` (sweeps.py appends a row as
each sweep starts and ends; the report reads it here, so the report does not import the runner)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolsense.utils.jsonl import JsonlStore

TIMINGS_FILE = "timings.jsonl"


def study_wall_time(root: str | Path, spans: dict[tuple[str, str], float | None] | None = None) -> dict[str, float]:
    """Seconds per sweep from ``<root>/timings.jsonl``, summed over the study's invocations that
    have a time (an interrupted study resumed later adds both parts; see :func:`untimed_invocations`). An invocation
    that never ended (killed by a session's end) counts up to the last file it left under its sweep: a lower bound."""
    out: dict[str, float] = {}
    for row in _timing_rows(root):
        if row.get("seconds") is not None:
            out[row["sweep"]] = out.get(row["sweep"], 0.0) + float(row["seconds"])
    for (sweep, _), seconds in (killed_spans(root) if spans is None else spans).items():
        if seconds is not None:
            out[sweep] = out.get(sweep, 0.0) + seconds
    return out


def untimed_invocations(root: str | Path, spans: dict[tuple[str, str], float | None] | None = None) -> dict[str, dict[str, int]]:
    """Per sweep, the invocations its wall time misses or only estimates: ``missing`` started and never ended
    (killed, or still running) and left no file, so their time is not counted; ``to_files`` never ended either and
    are counted to the last file they left (its modification time; a lower bound: the steps after it are not);
    ``from_log`` were interrupted and timed afterwards from their logs' first and last timestamps (a row with
    ``interrupted: true``). ``spans``: :func:`killed_spans` when the caller already has them (one folder walk)."""
    out: dict[str, dict[str, int]] = {}

    def count(sweep: str, key: str) -> None:
        counts = out.setdefault(sweep, {"missing": 0, "from_log": 0, "to_files": 0})
        counts[key] += 1

    for (sweep, _), seconds in (killed_spans(root) if spans is None else spans).items():
        count(sweep, "missing" if seconds is None else "to_files")
    for r in _timing_rows(root):
        if r.get("interrupted") and r.get("seconds") is not None:
            count(r["sweep"], "from_log")
    return out


def killed_spans(root: str | Path) -> dict[tuple[str, str], float | None]:
    """(sweep, invocation) -> seconds from its start to the last file modified under ``<root>/<sweep>/`` before the
    sweep's next start, for every invocation that started and never ended (None: it left no file, or its start time
    is unknown). Its start is the epoch in its id (``<pid>-<epoch>``, sweeps.py)."""
    rows = _timing_rows(root)
    ended = {r.get("invocation") for r in rows if r.get("seconds") is not None}
    starts: dict[str, list[tuple[float, str]]] = {}
    for r in rows:
        if r.get("event") == "start":
            starts.setdefault(r["sweep"], []).append((_epoch(r.get("invocation")), r.get("invocation")))
    out: dict[tuple[str, str], float | None] = {}
    for sweep, seq in starts.items():
        known = sorted(t for t, _ in seq if t is not None)
        mtimes = None
        for t0, inv in seq:
            if inv in ended:
                continue
            if t0 is None:
                out[(sweep, inv)] = None
                continue
            mtimes = mtimes if mtimes is not None else _mtimes(Path(root) / sweep)
            until = next((t for t in known if t > t0), float("inf"))
            last = max((m for m in mtimes if t0 <= m < until), default=None)
            out[(sweep, inv)] = None if last is None else round(last - t0, 1)
    return out


def _epoch(invocation: Any) -> float | None:
    tail = str(invocation or "").rpartition("-")[2]
    return float(tail) if tail.isdigit() else None


def _mtimes(folder: Path) -> list[float]:
    return [p.stat().st_mtime for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []


def _timing_rows(root: str | Path) -> list[dict[str, Any]]:
    path = Path(root) / TIMINGS_FILE
    return list(JsonlStore(path)) if path.exists() else []


def wall_text(total: float, untimed: dict[str, dict[str, int]] | None) -> str:
    """A report header's wall time: a lower bound where some invocation never ended (killed, or still running)."""
    missing = sum(u.get("missing", 0) for u in (untimed or {}).values())
    to_files = sum(u.get("to_files", 0) for u in (untimed or {}).values())
    if not missing and not to_files:
        return f"{total / 3600:.1f} h on this machine"
    notes = [f"{n} invocation{'s' * (n > 1)} that did not end, killed or still running, counted to the last file "
             f"{'they' if n > 1 else 'it'} left" for n in [to_files] if n]
    notes += [f"{n} invocation{'s' * (n > 1)} that did not end and left no file, not counted" for n in [missing] if n]
    return f"at least {total / 3600:.1f} h on this machine ({'; '.join(notes)}: see How the runs ran)"
