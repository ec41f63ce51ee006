"""Experiment trackers: metrics always go to ``<run_dir>/metrics.jsonl``; W&B optionally.

A tracker never sees secrets: W&B reads its key from the environment itself, and the config we
log is passed through :func:`redact`. Callers use ``finish()`` in ``finally``. W&B runs are made
comparable by :func:`run_labels` (experiment, index scheme, formats, tuning, seed, model), logged
both as ``key:value`` tags and as the ``labels`` config section; a sweep is one W&B group.
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


def run_labels(config: dict) -> dict[str, str]:
    """What tells two training runs apart, read from a resolved train config (missing parts are
    left out): ``{experiment, index_scheme, formats, tuning, seed, model}``."""
    index, mem = config.get("index") or {}, config.get("memorization") or {}
    labels = {
        "experiment": config.get("experiment"),
        "index_scheme": None if "builder" not in index else ("flat" if index["builder"] == "flat" else "hierarchical"),
        "formats": "+".join(mem["formats"]) if mem.get("formats") else None,
        "tuning": (config.get("tuning") or {}).get("method"),
        "seed": (config.get("trainer") or {}).get("seed"),
        "model": (config.get("model") or {}).get("name_or_path"),
    }
    return {k: str(v) for k, v in labels.items() if v is not None}


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
    """One W&B run under ``<run_dir>/wandb`` (offline unless ``mode`` says otherwise). On finish an
    offline run prints the ``wandb sync`` command that uploads it."""

    def __init__(self, *, project: str, entity: str | None, mode: str, group: str, name: str, tags: list[str], config: dict,
                 run_dir: Path, job_type: str = "train"):
        import wandb

        labels = run_labels(config)
        tags = list(dict.fromkeys([*tags, *(f"{k}:{v}" for k, v in labels.items())]))
        self._run = wandb.init(
            project=project, entity=entity, mode=mode, group=group, name=name, tags=tags, job_type=job_type,
            config={**redact(config), "labels": labels}, dir=str(run_dir), reinit="finish_previous",
        )
        self.offline = mode == "offline"

    def log(self, metrics: dict[str, float], step: int) -> None:
        self._run.log(metrics, step=step)

    def finish(self) -> None:
        run_dir = Path(self._run.dir).parent  # <dir>/wandb/offline-run-<time>-<id>
        self._run.finish()
        if self.offline:
            print(f"W&B run saved offline; upload it with: wandb sync {run_dir}", flush=True)


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
def _wandb(*, logger, name: str, tags: list[str], config: dict, run_dir: Path, group: str, job_type: str) -> list[Tracker]:
    return [WandbTracker(project=logger.project, entity=logger.entity, mode=logger.mode, group=logger.group or group,
                         name=name, tags=list(logger.tags) + tags, config=config, run_dir=run_dir, job_type=job_type)]


def make_tracker(logger, *, run_dir: Path, name: str, group: str, tags: list[str], config: dict, extra: dict | None = None,
                 job_type: str = "train") -> MultiTracker:
    """The run's JSONL tracker plus the one ``logger.kind`` names (``logger`` has kind, project,
    entity, mode, group, tags: ``LoggerConfig``); ``group`` applies when ``logger.group`` is None."""
    others = TRACKERS.get(str(logger.kind))(logger=logger, name=name, tags=tags, config=config, run_dir=run_dir, group=group,
                                            job_type=job_type)
    return MultiTracker([JsonlTracker(run_dir / "metrics.jsonl", extra), *others])
