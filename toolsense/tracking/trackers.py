"""Experiment trackers: metrics always go to ``<run_dir>/metrics.jsonl``; W&B optionally.
The one tracking module of training (``train/``), evaluation (``eval/``) and generation
(``gen/``); all three are configured by the ``logger`` group (:class:`LoggerConfig`).

A tracker never sees secrets: W&B reads its key from the environment itself, and the config we
log is passed through :func:`redact`. Callers use ``finish()`` in ``finally``. W&B runs are made
comparable by :func:`run_labels` (experiment, index scheme, formats, tuning, seed, model), logged
both as ``key:value`` tags and as the ``labels`` config section; a sweep is one W&B group. An
evaluation's run carries the evaluation's own config (the trained run's labels beside it), its
samples as a ``wandb.Table`` and its ``results.json`` / ``report.html`` as an artifact.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Protocol

from toolsense.utils.choices import StrEnum, choice
from toolsense.utils.registry import Registry

log = logging.getLogger(__name__)

SECRET_KEY = re.compile(r"(api_?key|secret|password|passwd|access_token|auth_token|hf_token|wandb_key)", re.I)


class LoggerKind(StrEnum):
    none = "none"
    wandb = "wandb"


@dataclass
class LoggerConfig:
    """The ``logger`` group (conf/logger/), shared by train.py, evaluate.py and generate.py."""

    kind: LoggerKind = LoggerKind.none
    """none: metrics.jsonl (training) and the result files only; wandb: also Weights & Biases
    (WANDB_API_KEY from the environment only)."""
    project: str = "toolsense"
    entity: Optional[str] = None
    mode: Optional[str] = "${oc.env:WANDB_MODE,offline}"
    """offline (default) | online | disabled; the WANDB_MODE environment variable overrides."""
    group: Optional[str] = None
    """Runs are grouped by this; None = the experiment name (evaluation: the evaluated run's group)."""
    name: Optional[str] = None
    """W&B run name; None = ``<experiment>-<tuning>-<stage>`` (evaluation: ``...-eval``)."""
    tags: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.kind = choice(LoggerKind, self.kind, "logger.kind")


def wandb_mode(mode: Optional[str]) -> str:
    """``mode``, or WANDB_MODE (else offline) when unset or still the unresolved default."""
    return mode if mode and not mode.startswith("${") else os.environ.get("WANDB_MODE", "offline")


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


class Files:
    """What a tracker may keep beside numbers: a table and files. Trackers without a place for
    them (the JSONL file, which sits beside those files already) inherit these no-ops."""

    def log_table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        """A table under ``key`` (W&B: a ``wandb.Table``)."""

    def log_files(self, name: str, kind: str, paths: list[Path]) -> None:
        """Files as one named artifact of type ``kind`` (the paths that exist)."""


class JsonlTracker(Files):
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


def forget_rows(path: str | Path, drop: Callable[[dict], bool]) -> int:
    """Rewrite a metrics.jsonl without the rows ``drop`` selects (atomically; a torn last line
    left by a kill is cut first, see JsonlStore); returns how many went. A resumed stage uses it
    so that the steps it redoes replace the killed run's rows instead of repeating them."""
    from toolsense.utils.jsonl import JsonlStore
    from toolsense.utils.paths import atomic_write_text

    path = Path(path)
    if not path.exists():
        return 0
    rows = JsonlStore(path).rows
    kept = [r for r in rows if not drop(r)]
    if len(kept) < len(rows):
        atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in kept))
    return len(rows) - len(kept)


class WandbTracker:
    """One W&B run under ``<run_dir>/wandb`` (offline unless ``mode`` says otherwise). On finish an
    offline run prints the ``wandb sync`` command that uploads it. ``labels`` default to those of
    ``config`` (a training config); an evaluation passes its trained run's."""

    def __init__(self, *, project: str, entity: str | None, mode: str, group: str, name: str, tags: list[str], config: dict,
                 run_dir: Path, job_type: str = "train", labels: dict[str, str] | None = None):
        import wandb

        labels = run_labels(config) if labels is None else labels
        tags = list(dict.fromkeys([*tags, *(f"{k}:{v}" for k, v in labels.items())]))
        self._run = wandb.init(
            project=project, entity=entity, mode=mode, group=group, name=name, tags=tags, job_type=job_type,
            config={**redact(config), "labels": labels}, dir=str(run_dir), reinit="finish_previous",
        )
        self.offline = mode == "offline"

    def log(self, metrics: dict[str, float], step: int) -> None:
        self._run.log(metrics, step=step)

    def log_table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        import wandb

        self._run.log({key: wandb.Table(columns=columns, data=rows)})

    def log_files(self, name: str, kind: str, paths: list[Path]) -> None:
        import wandb

        art = wandb.Artifact(re.sub(r"[^\w.-]", "-", name), type=kind)
        for p in paths:
            if Path(p).is_file():
                art.add_file(str(p), name=Path(p).name)
        self._run.log_artifact(art)

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

    def log_table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        for t in self.trackers:
            if hasattr(t, "log_table"):
                t.log_table(key, columns, rows)

    def log_files(self, name: str, kind: str, paths: list[Path]) -> None:
        for t in self.trackers:
            if hasattr(t, "log_files"):
                t.log_files(name, kind, paths)

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
def _wandb(*, logger, name: str, tags: list[str], config: dict, run_dir: Path, group: str, job_type: str,
           labels: dict[str, str] | None = None) -> list[Tracker]:
    return [WandbTracker(project=logger.project, entity=logger.entity, mode=wandb_mode(logger.mode), group=logger.group or group,
                         name=getattr(logger, "name", None) or name, tags=list(logger.tags) + tags, config=config, run_dir=run_dir,
                         job_type=job_type, labels=labels)]


def make_tracker(logger, *, run_dir: Path, name: str, group: str, tags: list[str], config: dict, extra: dict | None = None,
                 job_type: str = "train", labels: dict[str, str] | None = None) -> MultiTracker:
    """The run's JSONL tracker plus the one ``logger.kind`` names (``logger`` has kind, project,
    entity, mode, group, tags: ``LoggerConfig``); ``group`` applies when ``logger.group`` is None;
    ``labels`` (default: read from ``config``) tag the run."""
    others = TRACKERS.get(str(logger.kind))(logger=logger, name=name, tags=tags, config=config, run_dir=run_dir, group=group,
                                            job_type=job_type, **({"labels": labels} if labels is not None else {}))
    return MultiTracker([JsonlTracker(run_dir / "metrics.jsonl", extra), *others])


def namespaced(prefix: str, metrics: dict[str, Any]) -> dict[str, float]:
    """``{prefix/key: value}`` for the finite numbers of a flat (or ``a/b``-keyed) dict."""
    return {f"{prefix}/{k}": float(v) for k, v in metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v}


def eval_metrics(results: list[dict]) -> dict[str, float]:
    """``eval/<benchmark>/<system>/<metric>`` -> value, with its 95% interval as ``..._lo`` / ``..._hi``."""
    out = {}
    for r in results:
        for name, est in r["metrics"].items():
            if isinstance(est, dict) and est.get("value") is not None:
                key = f"eval/{r['benchmark']}/{r['system']}/{name}"
                out[key] = est["value"]
                out.update({f"{key}_{b}": est[b] for b in ("lo", "hi") if est.get(b) is not None})
    return out


class JobLog(Files):
    """What :func:`job_tracker` yields: ``log(metrics)`` (one step), and the tracker's table and
    files; without a tracker (kind=none) every call does nothing."""

    def __init__(self, tracker: MultiTracker | None = None):
        self.tracker = tracker

    @property
    def active(self) -> bool:
        """A tracker is behind it (kind != none)."""
        return self.tracker is not None

    def __call__(self, metrics: dict[str, float]) -> None:
        if self.tracker is not None:
            self.tracker.log(metrics, 0)

    def log_table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        if self.tracker is not None:
            self.tracker.log_table(key, columns, rows)

    def log_files(self, name: str, kind: str, paths: list[Path]) -> None:
        if self.tracker is not None:
            self.tracker.log_files(name, kind, paths)


@contextmanager
def job_tracker(logger: LoggerConfig, *, out: str | Path, name: str, group: str, tags: list[str], config: dict,
                job_type: str, labels: dict[str, str] | None = None) -> Iterator[JobLog]:
    """Yields a :class:`JobLog` for one evaluate.py / generate.py job: no-ops for kind=none (the
    job's own files are the record), else a W&B run in ``out/wandb`` (config redacted) whose
    ``finish()`` runs however the job ends."""
    if str(logger.kind) == "none":
        yield JobLog()
        return
    track = make_tracker(logger, run_dir=Path(out), name=name, group=group, tags=tags, config=config, job_type=job_type,
                         labels=labels)
    try:
        yield JobLog(track)
    finally:
        track.finish()


def log_job_summary(logger: LoggerConfig, summary: dict[str, Any], *, prefix: str, out: str | Path, config: dict,
                    job_type: str) -> dict[str, float]:
    """Log the numeric ``<prefix>/...`` entries of a finished job's summary (generate.py's
    ``gen/...`` counts) as one step; returns what was logged (nothing is sent for kind=none)."""
    metrics = {k: float(v) for k, v in summary.items()
               if k.startswith(f"{prefix}/") and isinstance(v, (int, float)) and not isinstance(v, bool)}
    with job_tracker(logger, out=out, name=logger.name or job_type, group=job_type, tags=[f"job:{job_type}"],
                     config=config, job_type=job_type) as track:
        track(metrics)
    return metrics


def evaluated_model(config: dict[str, Any], trained: dict[str, Any]) -> dict[str, Any] | None:
    """The ``model`` section of the model an evaluate.py ``config`` evaluates: the training run's
    own (``trained``: its config) with evaluate.py's ``dtype`` / ``model.attn_implementation``
    overrides, as evaluation/context.py's ``load_run`` loads it (evaluate.py's ``model`` section is
    unused then); evaluate.py's ``model`` without a run; None when no model is evaluated
    (``parametric: false``: baselines only)."""
    if str(config.get("task", "evaluate")) == "evaluate" and config.get("parametric") is False:
        return None
    if not trained.get("model"):
        return config.get("model")
    model = dict(trained["model"])
    if config.get("dtype"):
        model["dtype"] = config["dtype"]
    if (attn := (config.get("model") or {}).get("attn_implementation")) is not None:
        model["attn_implementation"] = attn
    return model


def evaluation_tracker(logger: LoggerConfig, config: dict[str, Any], out: str | Path, run: str | Path | None):
    """:func:`job_tracker` for evaluate.py: the run's config is the evaluation's own (``config``),
    its ``model`` the one evaluated (:func:`evaluated_model`: the training run's when ``run`` is
    given), labelled, tagged and grouped like the training run ``run`` (when given, its config read
    through :class:`~toolsense.utils.rundir.RunDir`), whose labels sit under ``labels`` and whose
    experiment under ``trained_experiment``."""
    from toolsense.utils.rundir import RunDir

    trained = RunDir(run).config() if run else {}
    config = {**config, "model": evaluated_model(config, trained)}
    labels = run_labels(trained) if trained else run_labels({"model": config.get("model")})
    group = (trained.get("logger") or {}).get("group") or labels.get("experiment") or "evaluate"
    name = "-".join([*(labels[k] for k in ("experiment", "tuning") if k in labels), "eval"])
    extra = {"trained_experiment": trained["experiment"]} if trained.get("experiment") else {}
    return job_tracker(logger, out=out, name=name, group=group, tags=["job:evaluate"], config={**config, **extra},
                       job_type="evaluate", labels=labels)
