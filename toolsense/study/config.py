"""The study's config: ``conf/reproduce.yaml`` and its ``study=`` options (``conf/study/<name>.yaml``)."""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from typing import Optional

from toolsense.conduct.interruptions import Interruption
from toolsense.plan.config import AnalysisPlan
from toolsense.utils.errors import ConfigError, MissingFile


@dataclass
class StudyInput:
    """A file the study reads that our data does not hold (study=paper: ToolBench's Stage-2 training
    queries); its sweeps refer to it as ``${inputs.<name>.path}``."""

    path: Optional[str] = None
    """File or glob; null = not given (a study that trains refuses to start, naming this field)."""
    about: str = ""
    """What the file is and where it comes from (shown when it is missing)."""


@dataclass
class CodeChange:
    """A code change made after a study's first result that moved a number or a verdict (the report's disclosure)."""

    commit: str = ""
    """Its commit (short SHA)."""
    what: str = ""
    """What the change did."""
    moved: str = ""
    """Which finding(s), number(s) or label(s) it moved."""
    before: str = ""
    """The number or verdict before it."""
    after: str = ""
    """... and after it."""


@dataclass
class StudyConfig:
    """Schema of ``conf/reproduce.yaml`` (registered as ``reproduce_schema``); a study option (``conf/study/<name>.yaml``) fills it."""

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
    The report's findings read ``grid``, ``appendix_e_covered`` (else ``appendix_e``) and, each as a grid
    of its own, ``architecture``, ``probe_model`` and ``retention`` (report.py SWEEP_ROLES, readings.py
    SECOND_READINGS); other names are trained and tabulated only."""
    evaluations: dict[str, list[str]] = field(default_factory=dict)
    """Name -> evaluate.py overrides of an untrained model (no training), run after the sweeps into
    ``<root>/<name>``: e.g. a stronger model's probe ceiling, which the report shows beside the runs."""
    only: list[str] = field(default_factory=list)
    """Run only these sweeps / evaluations (empty: all); the report still reads everything present."""
    workers: int = 1
    """Processes per sweep, each training the runs no other holds: one per core with
    OMP_NUM_THREADS=1 (2 on 2 cores). Worker i > 0 logs to ``<root>/<sweep>.worker<i>.log``."""
    sweep_workers: dict[str, int] = field(default_factory=dict)
    """Sweep name -> its own ``workers`` (fewer where runs side by side would not fit in memory, e.g.
    two full fine-tunings of a 0.5B model on 24 GiB); the others use ``workers``."""
    train: bool = True
    """false = build the report from what is under ``root`` without training anything (where
    ``root`` does not exist, from ``archive`` unpacked into root's parent: a fresh clone rebuilds
    docs/reports/reproduction.md from docs/reports/reproduction_results.tar.xz alone)."""
    report: str = "docs/reports/reproduction.md"
    """The report (Markdown)."""
    plots_dir: str = "docs/reports/img/reproduction"
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
    pilots: dict[int, str] = field(default_factory=dict)
    """Finding number -> a measured pilot showing it cannot be tested at this budget (its number and
    where it is written up). Where the study's own runs leave that finding undecided (n/a or
    untestable), the report says **untestable** and quotes the pilot; a decided verdict is kept."""
    closed: Optional[str] = None
    """Why this study trains nothing more (its runs used data that has since changed, e.g. verbose
    queries v1): ``train=true`` is refused with this text; ``train=false`` rebuilds its report."""
    analysis: AnalysisPlan = field(default_factory=AnalysisPlan)
    """The pre-registered analysis plan (rules of every verdict): hashed and recorded with the commit
    in ``<root>/registration.json`` (and the archive) before the first sweep runs."""
    full_catalog: bool = False
    """Also rank the grid's baselines over the full 46,984-tool ToolBench catalog beside the study catalog's
    numbers (paper/full_catalog.py: cached under ``<root>/.full_catalog`` per benchmark file hash; about a
    minute per benchmark for BM25 on 2 cores the first time; dense only where its embeddings are cached)."""
    curves: dict[str, list[str]] = field(default_factory=dict)
    """Sweep name -> evaluate.py overrides (``stage=stage2`` by default, a light suite) applied to every saved
    Trainer checkpoint of its runs (``trainer.save_steps`` sets where; ``trainer.save_total_limit`` must keep
    them): each is evaluated once complete, while the sweep trains on, one evaluate.py process at a time,
    into ``<root>/.curves/<sweep>/<run>/<stage>-<step>`` (archived whether or not its run finished;
    curves/points.py). A learning curve from one run instead of a run per point."""
    curves_while_training: Optional[bool] = None
    """Evaluate curve points while the sweeps train (true), or after each group of sweeps (false); None: only where
    training has a GPU. On CPU both processes take every core: the pilot's Stage-2 step went 4.5 -> 65 s and a point's
    query 0.9 -> 11.5 s side by side on 2 cores, far slower than one after the other."""
    post_data_changes: list[CodeChange] = field(default_factory=list)
    """Every code change made after the first result that moved a number or a verdict: the report lists them all."""
    regime_targets: dict[str, float] = field(default_factory=dict)
    """Grid row -> the minimum constrained standard Rc@k after Stage 2 that chose this study's setting (a pilot's
    rules, e.g. ``tg-lora: 0.85``): the report shows each arm against it as a description (study/conduct.py), no
    verdict rests on it, and it is not part of the hashed plan (``analysis``)."""
    regime_source: str = ""
    """Where ``regime_targets`` come from (``the regime pilot's registered rules, docs/reports/pilot.md``)."""
    interruptions: list[Interruption] = field(default_factory=list)
    """The operator's log of pauses and kills of the study's runs (a SIGSTOP leaves no trace the code can read):
    the report lists them with what each does to the numbers and the wall time. Not part of the hashed plan."""
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
        bad = {k: v for k, v in self.sweep_workers.items() if k not in self.sweeps or v < 1}
        if bad:
            raise ValueError(f"sweep_workers: {bad} name no sweep of this study or ask for < 1 worker (sweeps: {list(self.sweeps)})")
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if not 0 < self.margin < 1:
            raise ValueError(f"margin must lie in (0, 1) (a proportion: 0.10 = 10 pp), got {self.margin}")
        if self.min_hits < 1:
            raise ValueError(f"min_hits must be >= 1, got {self.min_hits}")
        if set(self.curves) - set(self.sweeps):
            raise ValueError(f"curves: {sorted(set(self.curves) - set(self.sweeps))} are not sweeps of this study "
                             f"(sweeps: {list(self.sweeps)})")


def check_input(name: str, inp: StudyInput) -> None:
    """Refuse a study input that is not given or matches no file, naming the override that sets it."""
    if inp.path in (None, "", "???", "None"):
        raise ConfigError(f"inputs.{name}.path is required ({inp.about or 'a file this study reads'}); it is not in our data: "
                          f"set inputs.{name}.path=<file or glob>")
    if not glob.glob(inp.path):
        raise MissingFile(f"inputs.{name}.path={inp.path!r} matches no file ({inp.about or 'a file this study reads'})")


def register_configs() -> None:
    """Register :class:`StudyConfig` as ``reproduce_schema`` (reproduce.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("reproduce_schema", StudyConfig)
