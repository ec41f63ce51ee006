"""The study's training: each sweep one ``train.py -m`` process (or ``workers`` of them sharing its
runs; a worker with nothing left in one sweep starts the next) into ``<root>/<sweep>``, each
untrained evaluation one ``evaluate.py`` process; the wall time of each is appended to
``<root>/timings.jsonl`` (timings.py reads it). With ``archive`` set, the archive is repacked as
runs finish (archive.py); an untrained evaluation that ended writes its own ``done.json`` and is
skipped when the study reruns under the same overrides. With ``curves`` set, the checkpoints of the
named sweeps' runs are evaluated as training saves them, or after each group of sweeps
(``curves_while_training``; curves.py)."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from toolsense.conduct.archive import ArchiveProgress
from toolsense.conduct.timings import TIMINGS_FILE
from toolsense.curves.done import evaluation_finished, mark_evaluation_finished
from toolsense.curves.points import CurveEvaluations
from toolsense.study.config import StudyConfig
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.workers import run_workers

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


def sweep_groups(cfg: StudyConfig) -> list[list[str]]:
    """The training sweeps to run (all, or ``only``), in order, grouped by what may overlap:
    consecutive sweeps at the study's ``workers`` share one pool of workers (a worker that finds no
    run left in one sweep starts on the next while the others finish theirs, so no core idles
    through a sweep's last run); a sweep with its own ``sweep_workers`` runs alone, since its cap
    is a memory limit that another sweep's runs beside it would break."""
    groups: list[list[str]] = []
    for name in cfg.sweeps:
        if cfg.only and name not in cfg.only:
            continue
        if name in cfg.sweep_workers or not groups or groups[-1][-1] in cfg.sweep_workers:
            groups.append([name])
        else:
            groups[-1].append(name)
    return groups


def _gpu() -> bool:
    import torch
    return torch.cuda.is_available()


def run_sweeps(cfg: StudyConfig) -> list[dict[str, Any]]:
    """Train and evaluate every sweep (or ``only``) in order, each in its own processes (sweeps of a
    group overlapping at their ends, :func:`sweep_groups`); a failed sweep stops the study with its
    command (rerun the study to resume). With ``archive`` set, the archive is repacked whenever a
    run has finished (polled every minute) and after each group, so a machine lost mid-study loses
    at most the runs in progress. Returns the timings."""
    root = Path(cfg.root)
    root.mkdir(parents=True, exist_ok=True)
    timings = JsonlStore(root / TIMINGS_FILE)
    progress = ArchiveProgress(cfg.root, cfg.archive) if cfg.archive else None
    curves = CurveEvaluations(cfg.root, cfg.curves) if cfg.curves else None
    beside = cfg.curves_while_training if cfg.curves_while_training is not None else _gpu()

    def on_poll() -> None:
        if curves and beside:
            curves()
        if progress:
            progress()
    done: list[dict[str, Any]] = []
    started: dict[str, tuple[float, str]] = {}

    def on_start(name: str) -> None:
        t0 = time.time()
        started[name] = (t0, f"{os.getpid()}-{t0:.0f}")
        log.info("sweep %s: %s", name, " ".join(sweep_command(cfg, name)[1:]))
        timings.append({"sweep": name, "event": "start", "invocation": started[name][1],
                        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S")})  # a start with no end: it was interrupted

    def on_end(name: str, returncode: int, workers: int) -> None:
        t0, invocation = started[name]
        row = {"sweep": name, "seconds": round(time.time() - t0, 1), "returncode": returncode, "workers": workers,
               "invocation": invocation, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "overrides": cfg.sweeps.get(name) or cfg.evaluations[name]}
        timings.append(row)
        done.append(row)
        if returncode == 0 and name in cfg.evaluations:
            mark_evaluation_finished(root / name, sweep_command(cfg, name))

    evaluations = [[name] for name in cfg.evaluations if not cfg.only or name in cfg.only]
    for group in [*sweep_groups(cfg), *evaluations]:
        if group[0] in cfg.evaluations and evaluation_finished(root / group[0], sweep_command(cfg, group[0])):
            log.info("evaluation %s: finished earlier under these overrides (%s); skipped", group[0], root / group[0] / "done.json")
            continue
        workers = 1 if group[0] in cfg.evaluations else cfg.sweep_workers.get(group[0], cfg.workers)
        codes = run_workers([(name, sweep_command(cfg, name)) for name in group], workers, root,
                            on_poll=on_poll, on_start=on_start, on_end=on_end)
        if curves:  # the group's last points (its runs' final checkpoints of an unfinished stage are none)
            curves.drain()
        if progress:
            progress(force=True)
        failed = [name for name in group if codes.get(name, 0) != 0]
        if failed:
            raise RuntimeError(f"sweep {failed[0]} failed (exit {codes[failed[0]]}); rerun the study to resume it:\n"
                               f"  {' '.join(sweep_command(cfg, failed[0]))}")
    return done
