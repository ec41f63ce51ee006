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

from toolsense.utils.jsonl import JsonlStore

log = logging.getLogger(__name__)

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
    sweeps: dict[str, list[str]] = field(default_factory=dict)
    """Sweep name -> its own train.py -m overrides (comma lists are swept), run in this order.
    The report's findings read ``grid``, ``appendix_e_covered`` (else ``appendix_e``) and, each as a grid
    of its own, ``architecture``, ``probe_model`` and ``retention`` (reproduction/report.py SWEEP_ROLES,
    SECOND_READINGS); other names are trained and tabulated only."""
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
    timings = JsonlStore(root / "timings.jsonl")
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


def run_study(cfg: StudyConfig) -> dict[str, Any]:
    """Entry point of ``reproduce.py``: the sweeps (unless ``train=false``), then the report."""
    from toolsense.evaluation.html_report import write_html_report
    from toolsense.evaluation.reproduction import write_report

    if cfg.train:
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


def unpack_archive(cfg: StudyConfig) -> bool:
    """``train=false`` on a machine where the study never ran (``root`` absent or holding only
    hidden folders): unpack ``archive``
    (paths relative to root's parent) so the report is rebuilt from the shipped results alone.
    True when it unpacked (the archive is then not packed again from its own contents)."""
    import tarfile

    root = Path(cfg.root)
    ran_here = root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir())  # Hydra's .hydra_reproduce aside
    if ran_here or not cfg.archive or not Path(cfg.archive).is_file():
        return False
    root.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(cfg.archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.split("/")[0] == root.name]
        if not members:
            raise FileNotFoundError(f"archive: {cfg.archive} holds nothing under {root.name}/ (root={cfg.root})")
        tar.extractall(root.parent, members=members, filter="data")
    print(f"{cfg.root} held no results: unpacked {len(members)} files of {cfg.archive} into {root.parent}")
    return True


REPORT_FILES = ("results.json", "samples.jsonl", "samples.fingerprint.json", "drift.json", "config.yaml", "index.json",
                "metrics.jsonl", "timings.jsonl", "done.json")
"""The files a report is rebuilt from (under a run: its evaluation, config and index; never weights)."""


def _reported(parts: tuple[str, ...]) -> bool:
    """Whether ``<root>/<parts>`` belongs in the archive: not hidden (.hydra), and not inside a run's
    model or checkpoint folder (``<sweep>/<run>/stage1/...``; ``<run>/eval/stage1/`` is results)."""
    return not any(x.startswith(".") for x in parts) and not (len(parts) > 3 and parts[2] in ("stage1", "stage2", "checkpoints"))


def archive_results(root: str | Path, archive: str | Path) -> int:
    """Pack ``root``'s REPORT_FILES (not those inside a run's model or checkpoint folders) into
    ``archive`` (.tar.xz), written beside and renamed into place, with this checkout's absolute path
    made repo-relative wherever a file holds it (no machine's paths in the archive); returns the
    number of files."""
    import io
    import tarfile

    root, archive = Path(root), Path(archive)
    files = sorted(p for p in root.rglob("*") if p.name in REPORT_FILES and p.is_file() and _reported(p.relative_to(root).parts))
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + ".tmp")
    repo = f"{Path(__file__).resolve().parents[2]}/"
    with tarfile.open(tmp, "w:xz") as tar:
        for path in files:
            data = path.read_bytes()
            if repo.encode() in data:  # an evaluation's config echoes its output_dir, benchmark files and run: repo-relative here
                data = data.replace(repo.encode(), b"")
            info = tar.gettarinfo(path, arcname=str(path.relative_to(root.parent)))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    tmp.replace(archive)
    return len(files)


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

