"""Learning curves from one run's checkpoints (a study's ``curves``): while a sweep trains, every
saved Trainer checkpoint of its runs is evaluated once it is complete, one ``evaluate.py
run=<run> stage=<stage> checkpoint=<step>`` process at a time (evaluate.py exports the checkpoint
into a model folder first: training/snapshot.py), into ``<root>/.curves/<sweep>/<run>/<stage>-<step>``
beside a ``curve_point.json`` (run, stage, step, epoch). A checkpoint is complete once the files
the stage's callbacks write after the Trainer's own are in it (``MARKERS``), or a later one or its
stage's model folder exists. The stage's last checkpoint
is the stage itself, which the run's own evaluation after training scores: it is not evaluated
again. Each point ends with the done.json of an untrained evaluation (sweeps.py), so a rerun skips
it, and ``.curves`` travels in the study's archive (conduct/archive.py CACHES), so the points of a run that did not
finish survive the session. The machine's load average is sampled into ``timings.jsonl``
(``event: load``) every ``load_every_s``: run times on a shared machine are read beside it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

from toolsense.curves.done import evaluation_finished, mark_evaluation_finished
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.paths import atomic_write_text

log = logging.getLogger(__name__)

CURVES = ".curves"
TIMINGS_FILE = "timings.jsonl"
"""The study's timings file (conduct/timings.py reads its rows with ``seconds``; the load rows are this module's)."""
POINT_FILE = "curve_point.json"


def curve_stage(overrides: list[str]) -> str:
    """The stage whose checkpoints a curve's overrides evaluate (``stage=...``; default stage2)."""
    return next((o.split("=", 1)[1] for o in overrides if o.startswith("stage=")), "stage2")


MARKERS = ("loss_total.json", "embedding_rows.pt")
"""The files a stage's callbacks write into a checkpoint after the Trainer's own (training/resume.py LOSS_FILE,
training/trainer.py ROWS_FILE: the latter under LoRA only, where the adapters are ``adapter_model.safetensors``):
present, the checkpoint is whole (tests/study/test_curves.py holds them equal to training's)."""


def _whole(ckpt: Path) -> bool:
    lora = (ckpt / "adapter_model.safetensors").is_file()
    return (ckpt / "trainer_state.json").is_file() and all((ckpt / m).is_file() for m in MARKERS[: 2 if lora else 1])


def complete_checkpoints(run: Path, stage: str) -> list[int]:
    """The steps of ``run``'s complete checkpoints of ``stage`` (see MARKERS; or followed by a later one, or by the
    stage's folder), in order, but the stage's last step (the stage's own folder); see the module doc."""
    folder = run / "checkpoints" / stage
    found = sorted((int(m.group(1)), p) for p in (folder.iterdir() if folder.is_dir() else ())
                   if (m := re.fullmatch(r"checkpoint-(\d+)", p.name)) and (p / "trainer_state.json").is_file())
    done = (run / stage / "config.json").is_file()
    steps = [s for i, (s, p) in enumerate(found) if done or i < len(found) - 1 or _whole(p)]
    return [s for s in steps if _state(run, stage, s).get("max_steps") != s]


def point_dir(root: Path, sweep: str, run: Path, stage: str, step: int) -> Path:
    return root / CURVES / sweep / run.name / f"{stage}-{step}"


def point_command(overrides: list[str], run: Path, step: int, out: Path) -> list[str]:
    """The evaluate.py process of one point (the study's evaluations' shape: python -m job, overrides, output_dir last)."""
    stage = [] if any(o.startswith("stage=") for o in overrides) else ["stage=stage2"]
    return [sys.executable, "-m", "toolsense.jobs.evaluate", f"run={run}", *stage, f"checkpoint={step}", *overrides,
            f"output_dir={out}"]


def _state(run: Path, stage: str, step: int) -> dict[str, Any]:
    try:
        return json.loads((run / "checkpoints" / stage / f"checkpoint-{step}" / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class CurveEvaluations:
    """The study's poller of ``curves`` (called with the archive's, every few seconds by ``run_sweeps``):
    starts the next pending point when none runs, records it when it ends; :meth:`drain` waits for all."""

    def __init__(self, root: str | Path, curves: dict[str, list[str]], load_every_s: float = 300.0):
        self.root, self.curves, self.load_every_s = Path(root), curves, load_every_s
        self.proc: Optional[subprocess.Popen] = None
        self.current: Optional[tuple[list[str], Path, dict[str, Any]]] = None
        self.failed: set[str] = set()
        self.last_load = 0.0

    def pending(self) -> list[tuple[list[str], Path, dict[str, Any]]]:
        out = []
        for sweep, overrides in self.curves.items():
            stage = curve_stage(overrides)
            for run in sorted(p for p in (self.root / sweep).glob("*") if (p / "config.yaml").is_file()):
                for step in complete_checkpoints(run, stage):
                    d = point_dir(self.root, sweep, run, stage, step)
                    cmd = point_command(overrides, run, step, d)
                    if str(d) not in self.failed and not evaluation_finished(d, cmd):
                        out.append((cmd, d, {"sweep": sweep, "run": run.name, "stage": stage, "step": step,
                                             "epoch": _state(run, stage, step).get("epoch")}))
        return out

    def __call__(self, force: bool = False) -> None:
        self._sample_load()
        if self.proc is not None:
            if self.proc.poll() is None:
                return
            self._ended(self.proc.returncode)
        nxt = self.pending()
        if nxt:
            cmd, out, point = self.current = nxt[0]
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(out / POINT_FILE, json.dumps(point, indent=1) + "\n")
            log.info("curve point %s/%s %s step %d: %s", point["sweep"], point["run"], point["stage"], point["step"], " ".join(cmd[1:]))
            with open(self.root / "curves.log", "a", encoding="utf-8") as logf:
                self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)

    def _ended(self, code: int) -> None:
        cmd, out, point = self.current
        if code == 0:
            mark_evaluation_finished(out, cmd)
        else:  # not retried in this invocation (a rerun of the study retries it); the log says why
            self.failed.add(str(out))
            log.warning("curve point %s failed (exit %d): see %s", out, code, self.root / "curves.log")
        self.proc = self.current = None

    def _sample_load(self) -> None:
        if time.time() - self.last_load < self.load_every_s or not hasattr(os, "getloadavg"):
            return
        self.last_load = time.time()
        JsonlStore(self.root / TIMINGS_FILE).append({"event": "load", "loadavg": [round(x, 2) for x in os.getloadavg()],
                                                     "cpus": os.cpu_count(), "at": time.strftime("%Y-%m-%dT%H:%M:%S")})

    def drain(self, poll_s: float = 5.0) -> None:
        """Evaluate every pending point (the sweeps' training has ended), then return."""
        while self.proc is not None or self.pending():
            self()
            if self.proc is not None:
                time.sleep(poll_s)
