"""The study's training: each sweep one ``train.py -m`` process (or ``workers`` of them sharing its
runs) into ``<root>/<sweep>``, each untrained evaluation one ``evaluate.py`` process; the wall
time of each is appended to ``<root>/timings.jsonl`` (timings.py reads it)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from toolsense.study.config import StudyConfig
from toolsense.study.timings import TIMINGS_FILE
from toolsense.utils.jsonl import JsonlStore

log = logging.getLogger(__name__)


def sweep_command(cfg: StudyConfig, name: str) -> list[str]:
    """The command of one sweep (train.py -m: common overrides, then the sweep's own, into
    ``<root>/<name>``) or of one untrained evaluation (evaluate.py into ``<root>/<name>``)."""
    root = Path(__file__).resolve().parents[2]
    if name in cfg.evaluations:
        return [sys.executable, str(root / "evaluate.py"), *cfg.evaluations[name], f"output_dir={Path(cfg.root) / name}"]
    return [sys.executable, str(root / "train.py"), "-m", *cfg.common, *cfg.sweeps[name], f"hydra.sweep.dir={Path(cfg.root) / name}"]


def run_sweeps(cfg: StudyConfig) -> list[dict[str, Any]]:
    """Train and evaluate every sweep (or ``only``) in order, each in its own process; a failed
    sweep stops the study with its command (rerun the study to resume). Returns the timings."""
    root = Path(cfg.root)
    root.mkdir(parents=True, exist_ok=True)
    timings = JsonlStore(root / TIMINGS_FILE)
    done = []
    for name in [*cfg.sweeps, *cfg.evaluations]:
        if cfg.only and name not in cfg.only:
            continue
        cmd = sweep_command(cfg, name)
        log.info("sweep %s: %s", name, " ".join(cmd[1:]))
        t0 = time.time()
        invocation = f"{os.getpid()}-{t0:.0f}"
        timings.append({"sweep": name, "event": "start", "invocation": invocation,
                        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S")})  # a start with no end: it was interrupted
        workers = 1 if name in cfg.evaluations else cfg.workers
        returncode = run_workers(cmd, workers, root / name)
        row = {"sweep": name, "seconds": round(time.time() - t0, 1), "returncode": returncode, "workers": workers,
               "invocation": invocation, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "overrides": cfg.sweeps.get(name) or cfg.evaluations[name]}
        timings.append(row)
        done.append(row)
        if returncode != 0:
            raise RuntimeError(f"sweep {name} failed (exit {returncode}); rerun the study to resume it:\n  {' '.join(cmd)}")
    return done


def run_workers(cmd: list[str], workers: int, out: Path) -> int:
    """Run ``cmd`` in ``workers`` processes at once (worker 0 on this console, the others into
    ``<out>.worker<i>.log``), each skipping the runs another holds; the worst exit status."""
    if workers == 1:
        return subprocess.run(cmd).returncode
    env = {**os.environ, "TOOLSENSE_BUSY": "skip"}
    procs, logs = [], []
    for i in range(workers):
        if i:
            logs.append(open(f"{out}.worker{i}.log", "a"))
            log.info("worker %d of %d logs to %s", i, workers, logs[-1].name)
        procs.append(subprocess.Popen(cmd, env=env, stdout=logs[-1] if i else None, stderr=subprocess.STDOUT if i else None))
        time.sleep(2)  # staggered starts; which worker gets a run is decided by its lock either way
    codes = [p.wait() for p in procs]
    for fh in logs:
        fh.close()
    return max(codes, key=abs)
