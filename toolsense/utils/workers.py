"""A pool of worker processes over a list of jobs (commands), each job run by every worker: the
processes of one job share its runs through their run folders' locks (``TOOLSENSE_BUSY=skip``,
utils/rundir.py: a run another process holds is skipped), and a worker with nothing left in one
job starts the next while the others finish theirs, so no core idles through a job's last run.
The study runs its sweeps so (study/sweeps.py: ``workers=N``)."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Optional, Sequence

log = logging.getLogger(__name__)


@dataclass
class _Worker:
    index: int
    job: int = -1                      # the job it runs (or last ran); len(jobs) once it has run them all
    proc: Optional[subprocess.Popen] = None
    log: Optional[IO[str]] = None
    stopped: bool = False              # a job of this pool failed: it starts no new one


def run_workers(jobs: Sequence[tuple[str, list[str]]], workers: int, root: Path, on_poll: Optional[Callable[[], Any]] = None,
                poll_s: float = 5.0, on_start: Optional[Callable[[str], Any]] = None,
                on_end: Optional[Callable[[str, int, int], Any]] = None, stagger_s: float = 2.0) -> dict[str, int]:
    """Run the jobs (name, command), in order, in ``workers`` processes each that share its runs
    (``TOOLSENSE_BUSY=skip``: a run another holds is skipped); worker 0 on this console, worker i
    into ``<root>/<name>.worker<i>.log``. A worker whose process for one job exits (nothing left
    that no one holds) starts the next job while the others finish theirs; after a failure no
    worker starts a new job. ``on_start(name)`` as a job's first process starts, ``on_end(name,
    worst exit status, workers that ran it)`` once none runs it or will; ``on_poll()`` every
    ``poll_s`` seconds (the study's archiving); the first processes start ``stagger_s`` apart.
    Returns each started job's worst exit status."""
    env = {**os.environ, "TOOLSENSE_BUSY": "skip"} if workers > 1 else None
    pool = [_Worker(i) for i in range(workers)]
    codes: dict[str, int] = {}
    ran: dict[str, int] = {}

    def advance(w: _Worker) -> None:
        w.job += 1
        if w.job >= len(jobs) or w.stopped:
            w.proc, w.job = None, len(jobs)
            return
        name, cmd = jobs[w.job]
        if name not in codes:
            codes[name] = 0
            if on_start:
                on_start(name)
        ran[name] = ran.get(name, 0) + 1
        if w.index:
            w.log = open(root / f"{name}.worker{w.index}.log", "a")
            log.info("worker %d of %d logs to %s", w.index, workers, w.log.name)
        w.proc = subprocess.Popen(cmd, env=env, stdout=w.log, stderr=subprocess.STDOUT if w.log else None)

    for w in pool:
        advance(w)
        if workers > 1:
            time.sleep(stagger_s)  # staggered starts; which worker gets a run is decided by its lock either way
    ended: set[str] = set()
    while any(w.proc is not None for w in pool):
        if on_poll is not None:
            on_poll()
        for w in pool:
            if w.proc is None or w.proc.poll() is None:
                continue
            name, code = jobs[w.job][0], w.proc.returncode
            codes[name] = max(codes[name], code, key=abs)
            if w.log:
                w.log.close()
                w.log = None
            if code != 0:
                for other in pool:
                    other.stopped = True
            advance(w)
        for j, (name, _) in enumerate(jobs):  # a job ends once every worker has passed it
            if name in codes and name not in ended and all(w.job > j for w in pool):
                ended.add(name)
                if on_end:
                    on_end(name, codes[name], ran[name])
        if any(w.proc is not None for w in pool):
            time.sleep(poll_s)
    return codes
