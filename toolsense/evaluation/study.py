"""The reproduction study: the paper's configurations trained, evaluated and compared in one
command, then the report that sets each of the paper's findings beside ours.

    python reproduce.py                     # study=cpu: the CPU-scale study (make reproduce)
    python reproduce.py train=false         # rebuild the report from the results already under root

A study is a list of train.py ``-m`` sweeps (``sweeps``: name -> overrides) that share ``common``
overrides (model size, steps, the evaluation suite). Each sweep runs as its own train.py process
into ``<root>/<name>`` — a fixed directory, so rerunning the command resumes every sweep where it
stopped (finished stages are skipped, evaluations resume from their samples) — and ends with the
sweep's comparison table and plots (CompareAfterSweep). With ``workers=N`` each sweep runs as N
train.py processes that share its runs (a run directory is held by one process at a time; the
others skip it, TOOLSENSE_BUSY=skip), so N cores train N runs at once. The report (reproduction.py) is then built
from the ``results.json`` / ``drift.json`` files alone. Wall time per sweep is appended to
``<root>/timings.jsonl`` as each sweep ends.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from toolsense.evaluation.study_archive import ArchiveProgress, archive_results, restore_archive, unpack_archive
from toolsense.utils.jsonl import JsonlStore

log = logging.getLogger(__name__)


@dataclass
class StudyInput:
    """A file the study reads that our data does not hold (study=paper: ToolBench's Stage-2 training
    queries); its sweeps refer to it as ``${inputs.<name>.path}``."""

    path: Optional[str] = None
    """File or glob; null = not given (a study that trains refuses to start, naming this field)."""
    about: str = ""
    """What the file is and where it comes from (shown when it is missing)."""


@dataclass
class StudyConfig:
    """Schema of ``conf/reproduce.yaml`` (registered as ``reproduce_schema``); a study option
    (``conf/study/<name>.yaml``) fills it."""

    name: str = "cpu"
    """The study's name (shown in the report)."""
    root: str = "outputs/reproduce"
    """Where the sweeps write: ``<root>/<sweep name>/<job>_<experiment>-<tuning>/``."""
    common: list[str] = field(default_factory=list)
    """train.py overrides of every run (model, catalog, steps, evaluate.suite=..., evaluate.stages=...)."""
    launch: list[str] = field(default_factory=list)
    """train.py overrides that say where each run goes (``launcher=slurm`` and its ``hydra.launcher.*``
    sizes), after ``common`` and the sweep's own; empty = this machine. A dry run replaces them."""
    extra: list[str] = field(default_factory=list)
    """train.py overrides appended last to every sweep (not to ``evaluations``): a dry run's model,
    catalog slice and steps (``extra=[model=tiny_random,...]``); empty in a real study."""
    inputs: dict[str, StudyInput] = field(default_factory=dict)
    """Name -> a file the sweeps read that is not in our data; a missing one is refused before anything runs."""
    sweeps: dict[str, list[str]] = field(default_factory=dict)
    """Sweep name -> its own train.py -m overrides (comma lists are swept), run in this order.
    The report's findings read ``grid``, ``appendix_e`` and ``architecture`` (reproduction/report.py
    SWEEP_ROLES); other names are trained and tabulated only."""
    evaluations: dict[str, list[str]] = field(default_factory=dict)
    """Name -> evaluate.py overrides of an untrained model (no training), run after the sweeps into
    ``<root>/<name>``: e.g. a stronger model's probe ceiling, which the report shows beside the runs."""
    only: list[str] = field(default_factory=list)
    """Run only these sweeps / evaluations (empty: all); the report still reads everything present."""
    workers: int = 1
    """Processes per sweep, each training the runs no other holds: one per core with
    OMP_NUM_THREADS=1 (2 on 2 cores). Worker i > 0 logs to ``<root>/<sweep>.worker<i>.log``."""
    train: bool = True
    """false = build the report from what is under ``root`` without training anything (where
    ``root`` does not exist, from ``archive`` unpacked into root's parent: a fresh clone rebuilds
    docs/reproduction.md from docs/reproduction_results.tar.xz alone)."""
    report: str = "docs/reproduction.md"
    """The report (Markdown)."""
    plots_dir: str = "docs/img/reproduction"
    """The comparison plots of each sweep, ``<sweep>_<plot>.png``; the report links them relatively."""
    k: int = 5
    """The cutoff of the recall and IS columns the findings use (Rc@k, Rf@k, IS@k)."""
    resamples: int = 1000
    """Bootstrap resamples of the intervals."""
    margin: float = 0.10
    """Equivalence margin of "near chance" (finding 4): a probe score is near chance when its 90%
    interval lies inside chance ± margin (a proportion: 0.10 = 10 pp); shown in the report's header."""
    min_hits: int = 10
    """An IS on fewer constrained hits is flagged in the report and used for no verdict (finding 3)."""
    command: str = "make reproduce"
    """The command the report says made it."""
    archive: Optional[str] = None
    """Also pack the files the report is built from (results, per-item samples, drift, run configs
    and indexes, timings; no model weights) into this .tar.xz, paths relative to root's parent:
    ``tar xJf <archive> -C <dir>`` then ``train=false root=<dir>/<root's name>`` rebuilds the report."""
    notes: dict[int, str] = field(default_factory=dict)
    """Finding number -> the likeliest reason ours disagrees with the paper, written by whoever read
    the results (the numbers and verdicts are computed; the reasons are a person's judgement)."""

    def __post_init__(self) -> None:
        unknown = [s for s in self.only if s not in self.sweeps and s not in self.evaluations]
        if unknown:
            raise ValueError(f"only: {unknown} are not sweeps or evaluations of this study "
                             f"(sweeps: {list(self.sweeps)}, evaluations: {list(self.evaluations)})")
        both = sorted(set(self.sweeps) & set(self.evaluations))
        if both:
            raise ValueError(f"evaluations: {both} are also sweep names (each writes <root>/<name>)")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if not 0 < self.margin < 1:
            raise ValueError(f"margin must lie in (0, 1) (a proportion: 0.10 = 10 pp), got {self.margin}")
        if self.min_hits < 1:
            raise ValueError(f"min_hits must be >= 1, got {self.min_hits}")


def check_input(name: str, inp: StudyInput) -> None:
    """Refuse a study input that is not given or matches no file, naming the override that sets it."""
    import glob

    if inp.path in (None, "", "???", "None"):
        raise ValueError(f"inputs.{name}.path is required ({inp.about or 'a file this study reads'}); it is not in our data: "
                         f"set inputs.{name}.path=<file or glob>")
    if not glob.glob(inp.path):
        raise FileNotFoundError(f"inputs.{name}.path={inp.path!r} matches no file ({inp.about or 'a file this study reads'})")


def sweep_command(cfg: StudyConfig, name: str) -> list[str]:
    """The command of one sweep (train.py -m: common overrides, then the sweep's own, into
    ``<root>/<name>``) or of one untrained evaluation (evaluate.py into ``<root>/<name>``)."""
    root = Path(__file__).resolve().parents[2]
    if name in cfg.evaluations:
        return [sys.executable, str(root / "evaluate.py"), *cfg.evaluations[name], f"output_dir={Path(cfg.root) / name}"]
    return [sys.executable, str(root / "train.py"), "-m", *cfg.common, *cfg.sweeps[name], *cfg.launch, *cfg.extra,
            f"hydra.sweep.dir={Path(cfg.root) / name}"]


def run_sweeps(cfg: StudyConfig) -> list[dict[str, Any]]:
    """Train and evaluate every sweep (or ``only``) in order, each in its own process; a failed
    sweep stops the study with its command (rerun the study to resume). With ``archive`` set, the
    archive is repacked whenever a run has finished (polled every minute) and after each sweep, so
    a machine lost mid-study loses at most the runs in progress. Returns the timings."""
    root = Path(cfg.root)
    root.mkdir(parents=True, exist_ok=True)
    timings = JsonlStore(root / "timings.jsonl")
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
        workers = 1 if name in cfg.evaluations else cfg.workers
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
    import hashlib
    import json

    return hashlib.sha256(json.dumps(cmd[2:-1]).encode()).hexdigest()  # the overrides, without python, script and output_dir


def evaluation_finished(out: Path, cmd: list[str]) -> bool:
    """Whether an untrained evaluation of the study ended under these overrides (its done.json)."""
    import json

    try:
        return json.loads((out / "done.json").read_text(encoding="utf-8")).get("overrides_sha256") == _eval_identity(cmd)
    except (OSError, ValueError, AttributeError):
        return False


def mark_evaluation_finished(out: Path, cmd: list[str]) -> None:
    import json

    from toolsense.utils.paths import atomic_write_text

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


def run_study(cfg: StudyConfig) -> dict[str, Any]:
    """Entry point of ``reproduce.py``: the sweeps (unless ``train=false``), then the report."""
    from toolsense.evaluation.html_report import write_html_report
    from toolsense.evaluation.reproduction import write_report

    if cfg.train:
        for name, inp in cfg.inputs.items():  # before anything is written or submitted
            check_input(name, inp)
        restore_archive(cfg)
        run_sweeps(cfg)
    unpacked = not cfg.train and unpack_archive(cfg)
    summary = write_report(cfg)
    print(f"wrote {cfg.report} ({len(summary['findings'])} findings) from the results under {cfg.root}")
    page = write_html_report(cfg.root, Path(cfg.root) / "report.html", title="toolsense study: every evaluation")
    if page is not None:
        print(f"wrote {page} (every evaluation of the study: tables, plots, a per-sample browser)")
    if cfg.archive and not unpacked:
        n = archive_results(cfg.root, cfg.archive)
        print(f"wrote {cfg.archive} ({n} files the report is built from)")
    return summary


def study_wall_time(root: str | Path) -> dict[str, float]:
    """Seconds per sweep from ``<root>/timings.jsonl``, summed over the study's invocations that
    have a time (an interrupted study resumed later adds both parts; see :func:`untimed_invocations`)."""
    out: dict[str, float] = {}
    for row in _timing_rows(root):
        if row.get("seconds") is not None:
            out[row["sweep"]] = out.get(row["sweep"], 0.0) + float(row["seconds"])
    return out


def untimed_invocations(root: str | Path) -> dict[str, dict[str, int]]:
    """Per sweep, the invocations its wall time misses or only estimates: ``missing`` started and
    never ended (killed, or still running), so their time is not counted; ``from_log`` were
    interrupted and timed afterwards from their logs' first and last timestamps (a row with
    ``interrupted: true``)."""
    rows = _timing_rows(root)
    ended = {r.get("invocation") for r in rows if r.get("seconds") is not None}
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        key = "missing" if r.get("event") == "start" and r.get("invocation") not in ended else \
            "from_log" if r.get("interrupted") and r.get("seconds") is not None else None
        if key:
            counts = out.setdefault(r["sweep"], {"missing": 0, "from_log": 0})
            counts[key] += 1
    return out


def _timing_rows(root: str | Path) -> list[dict[str, Any]]:
    path = Path(root) / "timings.jsonl"
    return list(JsonlStore(path)) if path.exists() else []


def register_configs() -> None:
    """Register :class:`StudyConfig` as ``reproduce_schema`` (reproduce.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("reproduce_schema", StudyConfig)

