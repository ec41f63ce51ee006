"""The study's training: each sweep one ``train.py -m`` process (or ``workers`` of them sharing its
runs) into ``<root>/<sweep>``, each untrained evaluation one ``evaluate.py`` process; the wall
time of each is appended to ``<root>/timings.jsonl`` (timings.py reads it). With ``archive`` set, the
archive is repacked as runs finish (archive.py); an untrained evaluation that ended writes its own
``done.json`` and is skipped when the study reruns under the same overrides."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

from toolsense.study.archive import ArchiveProgress
from toolsense.study.config import StudyConfig
from toolsense.study.timings import TIMINGS_FILE
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.paths import atomic_write_text

log = logging.getLogger(__name__)


def sweep_command(cfg: StudyConfig, name: str) -> list[str]:
    """The command of one sweep (train.py -m: common overrides, then the sweep's own, into
    ``<root>/<name>``) or of one untrained evaluation (evaluate.py into ``<root>/<name>``), each
    run as the installed package's job module (``python -m toolsense.jobs.<job>``): no checkout needed."""
    if name in cfg.evaluations:
        return [sys.executable, "-m", "toolsense.jobs.evaluate", *cfg.evaluations[name],
                f"output_dir={Path(cfg.root) / name}"]
    return [sys.executable, "-m", "toolsense.jobs.train", "-m", *cfg.common, *cfg.sweeps[name], *cfg.launch, *cfg.extra,
            f"hydra.sweep.dir={Path(cfg.root) / name}"]


def run_sweeps(cfg: StudyConfig) -> list[dict[str, Any]]:
    """Train and evaluate every sweep (or ``only``) in order, each in its own process; a failed
    sweep stops the study with its command (rerun the study to resume). With ``archive`` set, the
    archive is repacked whenever a run has finished (polled every minute) and after each sweep, so
    a machine lost mid-study loses at most the runs in progress. Returns the timings."""
    root = Path(cfg.root)
    root.mkdir(parents=True, exist_ok=True)
    timings = JsonlStore(root / TIMINGS_FILE)
    progress = ArchiveProgress(cfg.root, cfg.archive) if cfg.archive else None
    done = []
    for name in [*cfg.sweeps, *cfg.evaluations]:
        if cfg.only and name not in cfg.only:
            continue
        cmd = sweep_command(cfg, name)
        if name in cfg.evaluations and evaluation_finished(root / name, cmd):
            log.info("evaluation %s: finished earlier under these overrides (%s); skipped", name, root / name / "done.json")
            continue
        log.info("sweep %s: %s", name, " ".join(cmd[1:]))
        t0 = time.time()
        invocation = f"{os.getpid()}-{t0:.0f}"
        timings.append({"sweep": name, "event": "start", "invocation": invocation,
                        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S")})  # a start with no end: it was interrupted
        workers = 1 if name in cfg.evaluations else cfg.sweep_workers.get(name, cfg.workers)
        returncode = run_workers(cmd, workers, root / name, on_poll=progress)
        row = {"sweep": name, "seconds": round(time.time() - t0, 1), "returncode": returncode, "workers": workers,
               "invocation": invocation, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "overrides": cfg.sweeps.get(name) or cfg.evaluations[name]}
        timings.append(row)
        done.append(row)
        if returncode == 0 and name in cfg.evaluations:
            mark_evaluation_finished(root / name, cmd)
        if progress:
            progress(force=True)
        if returncode != 0:
            raise RuntimeError(f"sweep {name} failed (exit {returncode}); rerun the study to resume it:\n  {' '.join(cmd)}")
    return done


def _eval_identity(cmd: list[str]) -> str:
    # the overrides, without python, -m, the job and output_dir (as when the job was a script: done.json files match)
    return hashlib.sha256(json.dumps(cmd[3:-1]).encode()).hexdigest()


def evaluation_finished(out: Path, cmd: list[str]) -> bool:
    """Whether an untrained evaluation of the study ended under these overrides (its done.json)."""
    try:
        return json.loads((out / "done.json").read_text(encoding="utf-8")).get("overrides_sha256") == _eval_identity(cmd)
    except (OSError, ValueError, AttributeError):
        return False


def mark_evaluation_finished(out: Path, cmd: list[str]) -> None:
    """Write the done.json of an untrained evaluation that ended (:func:`evaluation_finished` reads it)."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "done.json", json.dumps({"overrides_sha256": _eval_identity(cmd),
                                                      "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=2))


def run_workers(cmd: list[str], workers: int, out: Path, on_poll: Optional[Any] = None, poll_s: float = 5.0) -> int:
    """Run ``cmd`` in ``workers`` processes at once (worker 0 on this console, the others into
    ``<out>.worker<i>.log``), each skipping the runs another holds; the worst exit status.
    ``on_poll()`` is called every ``poll_s`` seconds while they run (the study's archiving)."""
    env = {**os.environ, "TOOLSENSE_BUSY": "skip"} if workers > 1 else None
    procs, logs = [], []
    for i in range(workers):
        if i:
            logs.append(open(f"{out}.worker{i}.log", "a"))
            log.info("worker %d of %d logs to %s", i, workers, logs[-1].name)
        procs.append(subprocess.Popen(cmd, env=env, stdout=logs[-1] if i else None, stderr=subprocess.STDOUT if i else None))
        if workers > 1:
            time.sleep(2)  # staggered starts; which worker gets a run is decided by its lock either way
    while any(p.poll() is None for p in procs):
        if on_poll is not None:
            on_poll()
        time.sleep(poll_s)
    codes = [p.wait() for p in procs]
    for fh in logs:
        fh.close()
    return max(codes, key=abs)
