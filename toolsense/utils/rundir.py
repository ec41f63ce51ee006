"""A training run directory: the one reader and writer of its layout.

Training writes it, evaluation (``load_run``), drift, the comparison table and the evaluation
tracker read it. It lives in ``utils`` because imports flow one way: both ``training`` and
``evaluation`` stand on it, and it knows nothing of either (sections come back as whatever
dataclass the caller names, through :func:`toolsense.utils.config.to_config`)::

    <run>/config.yaml    resolved config (model, catalog, index, prompts, ... sections)
    <run>/index.json     ToolIndex.save(...)
    <run>/stage1/ <run>/stage2/   HF model folders (LoRA merged) with the virtual tokens
    <run>/metrics.jsonl  training metrics, one JSON per line
    <run>/checkpoints/   Trainer checkpoints per stage
    <run>/.lock          held (flock) by the process training into the run, released when it exits or dies
    <run>/done.json      written when train.py has trained and evaluated the run to the end: the resolved
                         settings it ran under, so a rerun of the same settings skips it (even without model folders)
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import functools
import json
import logging
import os
import socket
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, TypeVar

from toolsense.utils.errors import MissingFile, UserError
from toolsense.utils.identity import changes
from toolsense.utils.io import code_state, sha256_file, sha256_text
from toolsense.utils.paths import atomic_write_text
from toolsense.utils.publish import complete
from toolsense.utils.ranks import rank

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RunDir:
    path: Path

    def __init__(self, path: str | Path):
        object.__setattr__(self, "path", Path(path))

    @property
    def config_path(self) -> Path:
        return self.path / "config.yaml"

    @property
    def index_path(self) -> Path:
        return self.path / "index.json"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def done_path(self) -> Path:
        return self.path / "done.json"

    def finished(self, identity: dict[str, Any], defaults: Iterable[str] = (),
                 legacy: Callable[[dict[str, Any]], Optional[dict[str, Any]]] | None = None) -> bool:
        """Whether this run was trained and evaluated to the end under ``identity`` (the resolved
        settings done.json records): then a rerun has nothing to do, even where the model folders are
        gone (deleted to save disk, or a results archive unpacked elsewhere). A key only ``identity``
        holds at its default (``defaults``: ``utils/identity.py: at_default``) is a field added since,
        no difference. ``legacy`` turns a record of an older version (done.json with the config's
        sha256 alone) into the identity it stands for, or None when it cannot be read back."""
        record = self.done()
        recorded = record.get("identity") if record else None
        if record and recorded is None and legacy is not None:
            recorded = legacy(record)
        if not isinstance(recorded, dict):
            return False
        differ = changes(recorded, identity, defaults)
        if differ:
            log.info("%s: finished under other settings (%s differ)", self.done_path, ", ".join(differ[:8]))
        return not differ

    def done(self) -> Optional[dict[str, Any]]:
        """done.json as written, or None (absent, torn or foreign: the run is not finished)."""
        try:
            record = json.loads(self.done_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def mark_finished(self, identity: dict[str, Any]) -> None:
        """Record (rank 0) that the run ended under ``identity`` (plain data); see :meth:`finished`."""
        if rank() == 0:
            atomic_write_text(self.done_path, json.dumps({
                "identity": identity, "config_sha256": config_sha256(identity),
                "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "code": code_state()}, indent=2, default=str))  # the commit and the hash of any uncommitted change it ran on

    def stage(self, name: str) -> Path:
        """The model folder of ``name`` (stage1 | stage2)."""
        return self.path / name

    def has_stage(self, name: str) -> bool:
        return (self.stage(name) / "config.json").is_file()

    def checkpoint(self, stage: str, step: int) -> Path:
        """The Trainer checkpoint of ``stage`` at optimiser step ``step`` (``checkpoints/<stage>/checkpoint-<step>``)."""
        return self.path / "checkpoints" / stage / f"checkpoint-{step}"

    def snapshot(self, stage: str, step: int) -> Path:
        """The plain model folder exported from :meth:`checkpoint` (LoRA merged, as ``stage``'s own
        folder): ``snapshots/<stage>-<step>`` (training/snapshot.py writes it, evaluate.py reads it)."""
        return self.path / "snapshots" / f"{stage}-{step}"

    def model_folder(self, stage: str, step: int | None = None) -> Path:
        """What evaluating ``stage`` loads: its finished folder, or the snapshot at ``step``."""
        return self.stage(stage) if step is None else self.snapshot(stage, step)

    def config(self) -> dict[str, Any]:
        """The saved, resolved config as plain data; {} when the run has none."""
        return _load_yaml(self.config_path)

    def require(self, stage: str | None = None) -> "RunDir":
        """This run, checked to hold a config (and ``stage``'s model folder); else a
        FileNotFoundError naming what is missing."""
        if not self.config_path.is_file():
            raise MissingFile(f"{self.config_path}: no such file (is {self.path} a training run directory?)")
        if stage is not None and stage != "base" and not self.has_stage(stage):
            raise MissingFile(f"{self.stage(stage)}: no model folder for stage {stage!r}")
        return self

    def section(self, name: str, cls: type[T]) -> T:
        """Config section ``name`` as ``cls``; keys ``cls`` does not declare are ignored (a run
        saved by an older version may carry them), bad values raise naming the file and field."""
        from toolsense.utils.config import to_config

        return to_config(cls, self.config().get(name), f"{self.config_path}: {name}", ignore_unknown=True)

    def index_sha256(self) -> str:
        """The fingerprint of the run's index (what its virtual tokens mean)."""
        return sha256_file(self.index_path)

    def label(self) -> str:
        """``experiment-tuning`` (e.g. tg_3fm-lora), else the folder's name."""
        cfg = self.config()
        parts = [cfg.get("experiment"), (cfg.get("tuning") or {}).get("method")]
        return "-".join(str(p) for p in parts if p) or self.path.name

    @contextlib.contextmanager
    def claim(self, wait: bool = False, doing: str = "") -> Iterator[bool]:
        """Hold the run for this process while the block runs: yields True when held, False when
        another process holds it (two processes training into one run would corrupt it); with
        ``wait`` it blocks until the holder is gone instead. The OS releases the lock when the
        holder exits or is killed, so a crashed run is never stuck. The holder writes who it is
        into ``.lock`` (:meth:`holder`), and what it is ``doing`` there (training, evaluating...),
        which a refused process names (not its own work). In a job of several ranks only rank 0
        claims (the other ranks follow its outcome: ``pipeline.train``), so a second job aimed at the
        run is refused as a second process is."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".lock", "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            fh.truncate(0)  # only the holder writes; the program's name only (arguments may carry secrets)
            fh.write(f"pid {os.getpid()} on {socket.gethostname()} ({Path(sys.argv[0] or 'python').name})\n{doing}\n")
            fh.flush()
            try:
                yield True
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def holder(self) -> str:
        """Who holds the run, as its holder wrote it in ``.lock`` ("pid N on host (program)"),
        for the message of a process that was refused; "" when unknown."""
        return self._lock_lines()[0]

    def holder_doing(self) -> str:
        """What the holder said it is doing in this folder ("training"); "" when unknown."""
        return self._lock_lines()[1]

    def _lock_lines(self) -> tuple[str, str]:
        try:
            lines = (self.path / ".lock").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        return (lines[0].strip() if lines else "", lines[1].strip() if len(lines) > 1 else "")

    def write_config(self, data: dict[str, Any], ignore: Iterable[str] = (), defaults: Iterable[str] = ()) -> None:
        """Save ``data`` (plain, resolved) as config.yaml on rank 0; a run directory that holds
        a config differing outside the ``ignore`` sections is refused, naming each differing dotted
        field (rerunning the same command resumes; another config needs another directory). A run
        in which nothing was produced yet (:meth:`produced` is empty: a start that failed before
        training) is reclaimed: its config is replaced, and an index built under it removed. A key only
        ``data`` holds at its default (``defaults``) is a field added since the run began: no difference."""
        from omegaconf import OmegaConf

        if rank() != 0:  # other ranks must not read a half-written file
            return
        if self.config_path.exists():
            skip = set(ignore)
            old = {k: v for k, v in self.config().items() if k not in skip}
            diff = changes(old, {k: v for k, v in data.items() if k not in skip}, defaults)
            if not diff:
                return
            if self.produced():
                shown = ", ".join(diff[:8]) + (f" and {len(diff) - 8} more" if len(diff) > 8 else "")
                raise UserError(f"{self.config_path} holds a different config ({shown} differ); it has trained "
                                f"{', '.join(self.produced())} under it: use a new output_dir")
            self.index_path.unlink(missing_ok=True)  # built under the old config: rebuilt under the new one
        self.path.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(OmegaConf.create(data), self.config_path)

    def produced(self) -> list[str]:
        """What training or evaluation has written here beyond config.yaml and index.json (both
        derived from the config alone): model folders, checkpoints, metrics, done.json, eval/."""
        names = ("stage1", "stage2", "stage1.tmp", "stage2.tmp", "checkpoints", "metrics.jsonl", "done.json", "eval")
        return [n for n in names if (self.path / n).exists() and not _empty_dir(self.path / n)]


def _empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(p.is_file() for p in path.rglob("*"))


BUSY_ENV = "TOOLSENSE_BUSY"
BUSY_POLICIES = ("fail", "skip", "wait")
"""What a process does when another holds its folder, from ``$TOOLSENSE_BUSY``: ``fail`` (the
default: stop naming the holder), ``skip`` (a sweep worker moves on), ``wait`` (block until free)."""


def busy_policy() -> str:
    """``$TOOLSENSE_BUSY`` checked against :data:`BUSY_POLICIES` (unset = ``fail``)."""
    value = os.environ.get(BUSY_ENV, "").strip() or "fail"
    if value not in BUSY_POLICIES:
        raise UserError(f"{BUSY_ENV}={value!r}: choose from {list(BUSY_POLICIES)}")
    return value


def config_sha256(config: dict[str, Any]) -> str:
    """The sha256 of plain settings as canonical JSON (done.json's ``config_sha256``)."""
    return sha256_text(json.dumps(config, sort_keys=True, default=str))


@functools.lru_cache(maxsize=256)
def _load_cached(path: str, mtime_ns: int) -> dict[str, Any]:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(path), resolve=True) or {}


def _load_yaml(path: Path) -> dict[str, Any]:
    """config.yaml as plain data, read once per modification (the comparison reads one run's
    config for each of its results files)."""
    if not path.is_file():
        return {}
    return copy.deepcopy(_load_cached(str(path), path.stat().st_mtime_ns))

@contextlib.contextmanager
def holding(out: Path, doing: str = "evaluating", scratch: Iterable[str] = ()) -> Iterator[bool]:
    """One process per output folder (evaluate.py, compare.py): ``<out>/.lock`` held (RunDir.claim,
    released when the process exits or dies) while it writes there — two evaluations would each
    log every item. ``doing`` names the work in messages. Once held, a publish of the folder that a
    kill cut short is completed (utils/publish.py: its files renamed into place, or discarded when the
    kill came before its manifest). A :class:`UserError` escaping a folder that was fresh (absent or
    empty) and holds nothing but the lock and ``scratch`` (files made before any work: generate's
    ``generation_config.json``) removes the folder: a refused command leaves nothing behind.
    When another process holds it, ``TOOLSENSE_BUSY`` decides: ``fail`` (default) raises naming
    the holder (pid, host), ``skip`` yields False (nothing is done), ``wait`` blocks until free."""
    rd, policy = RunDir(out), busy_policy()
    fresh = not out.exists() or not any(out.iterdir())
    with rd.claim(doing=doing) as held:
        if held:
            complete(out)  # a publish a kill cut short is finished first (utils/publish.py)
            try:
                yield True
            except UserError:  # refused before anything was written: leave no folder behind
                left = list(out.iterdir())
                if fresh and all(p.is_file() and p.name in {".lock", *scratch} for p in left):
                    for p in left:
                        p.unlink()
                    out.rmdir()
                raise
            return
    who, theirs = rd.holder() or "a process that did not record itself", rd.holder_doing() or "working"
    if policy == "skip":
        log.warning("%s: %s is %s into this folder; skipped (TOOLSENSE_BUSY=skip)", out, who, theirs)
        yield False
        return
    if policy == "fail":
        raise UserError(f"{out}: another process is {theirs} into this folder ({who}; it holds {rd.path / '.lock'}); "
                        "wait for it, set TOOLSENSE_BUSY=wait to wait, or use another output_dir")
    log.warning("%s: waiting for %s to finish (TOOLSENSE_BUSY=wait)", out, who)
    with rd.claim(wait=True, doing=doing) as held:
        if held:
            complete(out)
        yield held


__all__ = ["BUSY_ENV", "BUSY_POLICIES", "RunDir", "busy_policy", "config_sha256", "holding"]
