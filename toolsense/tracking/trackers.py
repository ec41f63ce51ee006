"""Experiment trackers: metrics always go to ``<run_dir>/metrics.jsonl``; W&B optionally.

A tracker never sees secrets: W&B reads its key from the environment itself, and the config we
log is passed through :func:`redact`. Callers use ``finish()`` in ``finally``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any, Protocol

from toolsense.utils.registry import Registry

log = logging.getLogger(__name__)

SECRET_KEY = re.compile(r"(api_?key|secret|password|passwd|access_token|auth_token|hf_token|wandb_key)", re.I)


def redact(obj: Any) -> Any:
    """A copy of a nested dict/list with values under secret-looking keys replaced by '***'."""
    if isinstance(obj, dict):
        return {k: "***" if isinstance(k, str) and SECRET_KEY.search(k) else redact(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    return obj


class Tracker(Protocol):
    def log(self, metrics: dict[str, float], step: int) -> None: ...

    def finish(self) -> None: ...


class JsonlTracker:
    """Appends one JSON object per ``log`` call (``{"step", "time", **metrics}``), flushed at once,
    so an interrupted run keeps every line it logged and a resumed run continues the file."""

    def __init__(self, path: str | Path, extra: dict[str, Any] | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.extra = extra or {}

    def log(self, metrics: dict[str, float], step: int) -> None:
        row = {"step": step, "time": round(time.time(), 3), **self.extra, **metrics}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    def finish(self) -> None:
        """Nothing to close: each line is appended and the file closed as it is logged."""


class WandbTracker:
    def __init__(self, *, project: str, entity: str | None, mode: str, group: str, name: str, tags: list[str], config: dict, run_dir: Path):
        import wandb

        self._run = wandb.init(
            project=project, entity=entity, mode=mode, group=group, name=name, tags=tags,
            config=redact(config), dir=str(run_dir), reinit="finish_previous",
        )

    def log(self, metrics: dict[str, float], step: int) -> None:
        self._run.log(metrics, step=step)

    def finish(self) -> None:
        self._run.finish()


class MultiTracker:
    def __init__(self, trackers: list[Tracker]):
        self.trackers = trackers

    def log(self, metrics: dict[str, float], step: int) -> None:
        for t in self.trackers:
            t.log(metrics, step)

    def finish(self) -> None:
        for t in self.trackers:
            try:
                t.finish()
            except Exception:  # one tracker failing to close must not hide the others or the run's error
                log.exception("tracker %s failed to finish", type(t).__name__)


TRACKERS: Registry = Registry("logger")


@TRACKERS.register("none")
def _none(**_: Any) -> list[Tracker]:
    return []


@TRACKERS.register("wandb")
def _wandb(*, logger, name: str, tags: list[str], config: dict, run_dir: Path, group: str) -> list[Tracker]:
    return [WandbTracker(project=logger.project, entity=logger.entity, mode=logger.mode, group=logger.group or group,
                         name=name, tags=list(logger.tags) + tags, config=config, run_dir=run_dir)]


def make_tracker(logger, *, run_dir: Path, name: str, group: str, tags: list[str], config: dict, extra: dict | None = None) -> MultiTracker:
    """The run's JSONL tracker plus the one ``logger.kind`` names."""
    others = TRACKERS.get(str(logger.kind))(logger=logger, name=name, tags=tags, config=config, run_dir=run_dir, group=group)
    return MultiTracker([JsonlTracker(run_dir / "metrics.jsonl", extra), *others])
