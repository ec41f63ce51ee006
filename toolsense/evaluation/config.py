"""Typed config sections of ``evaluate.py`` (``conf/evaluate.yaml`` and its groups)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal, Optional, Sequence

from toolsense.baselines.config import BaselineConfig
from toolsense.catalog.config import CatalogConfig
from toolsense.data.prompts import PromptConfig, check_probe_template
from toolsense.decoding.config import DecodingConfig, QueryLengthConfig
from toolsense.evaluation.benchmarks import BenchmarkConfig, benchmark_sections
from toolsense.evaluation.systems import STANDALONE, SystemConfig
from toolsense.index.config import IndexConfig
from toolsense.models import ModelConfig
from toolsense.tracking import LoggerConfig
from toolsense.utils.choices import StrEnum, choice
from toolsense.utils.config import Layer, Seed, Share
from toolsense.utils.errors import ConfigError

PAPER_KS = (1, 5, 10, 50)
"""ToolGen's cut-offs; the default ``metrics.ks`` keeps those within the beam."""


@dataclass
class MetricsConfig:
    """What is computed from the rankings and probe answers (``metrics.*``): the cut-offs and the
    bootstrap. Read by tasks.py and probes.py, never by the search."""

    ks: Optional[list[int]] = None
    """Cut-offs of Rc@k, Rf@k, IS@k, recall@k and NDCG@k, each <= decoding.beam_width; None = the
    paper's 1, 5, 10, 50 up to the beam (1, 5, 10 with decoding=beam10)."""
    resamples: int = 1000
    """Bootstrap resamples over queries for the 95% intervals."""
    seed: Seed = 0
    """Bootstrap seed."""
    min_hits: int = 10
    """An IS@k resting on fewer constrained hits than this is flagged (``few_hits``) and not used
    for a verdict: a ratio of two or three hits says nothing (App. F's low-recall case)."""

    def __post_init__(self) -> None:
        if self.ks is not None:
            if not self.ks:
                raise ValueError("metrics.ks is empty: give at least one cut-off, e.g. metrics.ks=[1,5,10]")
            if bad := [k for k in self.ks if isinstance(k, bool) or not isinstance(k, int)]:
                raise ValueError(f"metrics.ks must be whole numbers (ranks), got {bad} in {list(self.ks)}")
            if len(set(self.ks)) < len(self.ks):
                raise ValueError(f"metrics.ks repeats a cut-off: {list(self.ks)}")
        if self.resamples < 1:
            raise ValueError(f"metrics.resamples must be >= 1 (bootstrap resamples), got {self.resamples}")
        if self.min_hits < 1:
            raise ValueError(f"metrics.min_hits must be >= 1, got {self.min_hits}")

    def within(self, beam_width: int) -> "MetricsConfig":
        """This section with ``ks`` resolved for a search of ``beam_width`` beams (None: the paper's
        cut-offs up to the beam); a cut-off outside [1, beam_width] is refused."""
        ks = list(self.ks) if self.ks is not None else [k for k in PAPER_KS if k <= beam_width] or [beam_width]
        bad = [k for k in ks if k < 1 or k > beam_width]
        if bad:
            raise ValueError(f"metrics.ks must lie in [1, decoding.beam_width={beam_width}], got {bad}")
        return dataclasses.replace(self, ks=ks)


@dataclass
class ProbeConfig:
    modes: list[str] = field(default_factory=lambda: ["token", "control"])
    """token: the tool is named only by its virtual token(s); control: by its name instead;
    card: by its name and descriptions (the ceiling: is the probe answerable at all?); options: not
    at all, the template's {tool} line dropped (what the question and options alone give away)."""
    seed: Seed = 0
    """Seed of the per-item option shuffles (the permutation is recorded in samples.jsonl)."""
    batch_size: int = 16
    """Prompts per forward pass (circular MCQ packs batch_size // n_options items per batch)."""
    template: str = "Consider this tool: {tool}\n{question}\n{options}\nAnswer with {choices} only."
    """User turn; {tool} is the token(s) or, in control / card mode, the tool's name (and card); its
    line is left out in options mode, so it must hold no other field there."""
    use_system_prompt: bool = False
    """Prepend the run's retrieval system prompt (off: probes are not retrieval requests)."""
    debias: Literal["none", "circular"] = "none"
    """none: the paper's single shuffled order; circular: also score MCQ under every cyclic
    rotation of the options (CircularEval) and QA with the Yes/No prior removed (mean-centred
    log-odds). Costs n_options x the MCQ forward passes; QA costs nothing extra."""
    flag_share: Share = 0.9
    """A probe whose most frequent prediction exceeds this share of items is flagged in tables."""

    def __post_init__(self) -> None:
        bad = [m for m in self.modes if m not in PROBE_MODES]
        if bad:
            raise ValueError(f"probe.modes may only contain {list(PROBE_MODES)}, got {bad}")
        if len(set(self.modes)) < len(self.modes):
            raise ValueError(f"probe.modes repeats a mode: {list(self.modes)}")
        check_probe_template(self.template, self.modes)
        if self.debias not in ("none", "circular"):
            raise ValueError(f"probe.debias must be 'none' or 'circular', got {self.debias!r}")
        if not 0 < self.flag_share <= 1:
            raise ValueError(f"probe.flag_share must lie in (0, 1], got {self.flag_share}")
        if self.batch_size < 1:
            raise ValueError(f"probe.batch_size must be >= 1, got {self.batch_size}")


PROBE_MODES = ("token", "control", "card", "options")


@dataclass
class DriftConfig:
    checkpoints: list[str] = field(default_factory=lambda: ["base", "stage1", "stage2"])
    """Stages of the run compared in order; 'base' = the base model with freshly initialised tokens."""
    sample_size: int = 2000
    """Base-vocabulary rows sampled (seeded) as the reference for relative drift."""
    max_pairs_tokens: int = 2000
    """Virtual tokens used for the mean pairwise cosine (a seeded sample beyond this)."""
    seed: Seed = 0

    def __post_init__(self) -> None:
        bad = [c for c in self.checkpoints if c not in ("base", "stage1", "stage2")]
        if bad or len(self.checkpoints) < 2 or len(set(self.checkpoints)) < len(self.checkpoints):
            raise ValueError(f"drift.checkpoints must list two or more of base, stage1, stage2, each once; got {list(self.checkpoints)}")
        if self.sample_size < 1 or self.max_pairs_tokens < 2:
            raise ValueError(f"drift.sample_size must be >= 1 and drift.max_pairs_tokens >= 2, got {self.sample_size}, "
                             f"{self.max_pairs_tokens}")


class Task(StrEnum):
    evaluate = "evaluate"
    """Retrieval benchmarks (constrained + free-form), MCQ/QA probes and baselines: one table."""
    drift = "drift"
    """Embedding drift base -> stage1 -> stage2 of ``run`` (drift.py)."""

    @classmethod
    def refusal(cls, field: str, value: object) -> str:
        """A job that left evaluate.py names the entry point that runs it now."""
        if str(value) in MOVED_TASKS:
            return (f"{field}={value} is no longer a job of evaluate.py (it evaluates one system); run: "
                    f"{MOVED_TASKS[str(value)]}")
        return super().refusal(field, value)


MOVED_TASKS = {"compare": "python compare.py roots=[<sweep or run dirs>] (conf/compare.yaml)",
               "annotate": "python annotate.py benchmark=<name> annotate.items=... (conf/annotate.yaml)",
               "kappa": "python annotate.py task=kappa annotate.sheets=[...] (conf/annotate.yaml)"}
"""Jobs evaluate.py used to run (``task=``), and the entry point that runs each now."""


@dataclass
class EvaluateConfig:
    """Schema of ``conf/evaluate.yaml`` (registered as ``evaluate_schema``): every default is
    here; the YAML holds only the defaults list and what differs."""

    model: ModelConfig = field(default_factory=ModelConfig)
    """Untrained evaluation (no ``run``): the base model that gets the index's tokens fresh."""
    catalog: Optional[CatalogConfig] = None
    """None (evaluate.yaml's default): a run's own catalog (``run=``), else the demo catalog. Given beside ``run=``
    (``catalog=<name>``, ``catalog.path=``) it is what baselines and systems rank and must hold exactly the run's
    index tools: one that differs is refused naming both (catalog/config.py: :func:`catalog_beside_run`)."""
    index: IndexConfig = field(default_factory=IndexConfig)
    prompts: PromptConfig = field(default_factory=PromptConfig)
    """Untrained evaluation only; a run brings its own."""
    benchmark: Optional[BenchmarkConfig] = None
    """One benchmark (``benchmark=<name>``); ignored when a suite sets ``benchmarks``."""
    benchmarks: dict[str, BenchmarkConfig] = field(default_factory=dict)
    """A suite's label -> benchmark map."""
    baseline: Optional[BaselineConfig] = None
    baselines: dict[str, BaselineConfig] = field(default_factory=dict)
    """A suite's label -> baseline map; replaces ``baseline``."""
    system: Optional[SystemConfig] = None
    """One system (``system=<name>``, conf/system/): a hybrid evaluated beside the model."""
    systems: dict[str, SystemConfig] = field(default_factory=dict)
    """A suite's label -> system map; replaces ``system``."""
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    query_length: QueryLengthConfig = field(default_factory=QueryLengthConfig)
    """A query longer than the model can read: refused (default) or truncated, before any search (decoding/length.py)."""
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    """Cut-offs and bootstrap of every estimate (``metrics.ks``, ``metrics.resamples``, ...)."""
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    drift: DriftConfig = field(default_factory=DriftConfig)
    run: Optional[str] = None
    """Training run directory (config.yaml, index.json, stage1/, stage2/)."""
    stage: str = "stage2"
    """Which checkpoint of the run to evaluate."""
    checkpoint: Optional[int] = None
    """A Trainer checkpoint of ``stage`` (``<run>/checkpoints/<stage>/checkpoint-<N>``) evaluated instead of the
    finished stage: exported once into ``<run>/snapshots/<stage>-<N>`` (LoRA merged; training/snapshot.py).
    A learning curve from one run's checkpoints; None = the stage's own folder."""
    device: Optional[str] = None
    """None = this process's GPU if any, else cpu."""
    dtype: Optional[str] = None
    """Override the run's model dtype (e.g. float32)."""
    task: Task = Task.evaluate
    parametric: bool = True
    """false = baselines only (no LLM is loaded)."""
    overwrite: bool = False
    """An output folder holding another evaluation's samples is refused; true deletes that evaluation's files and starts it over."""
    output_dir: Optional[str] = None
    """None = Hydra's (timestamped) output dir; outside Hydra, outputs/evaluate."""

    def __post_init__(self) -> None:
        self.task = choice(Task, self.task, "task")
        self.metrics = self.metrics.within(self.decoding.beam_width)
        if self.stage not in ("stage1", "stage2"):
            raise ValueError(f"stage must be stage1 or stage2 (a checkpoint of run), got {self.stage!r}")
        if self.checkpoint is not None and (not self.run or self.task != Task.evaluate or self.checkpoint < 1):
            raise ValueError(f"checkpoint={self.checkpoint}: a Trainer checkpoint step (>= 1) of run=<training run directory>, "
                             f"evaluated with task=evaluate (run={self.run}, task={self.task})")
        if self.task == Task.drift and not self.run:
            raise ValueError("task=drift needs run=<training run directory>")
        needs_model = {k for k, sc in self.system_sections().items() if sc.kind not in STANDALONE}
        if self.task == Task.evaluate and not self.parametric and needs_model:
            raise ConfigError(f"systems {sorted(needs_model)} re-rank with the parametric model: "
                             "they need parametric=true (or drop system= / systems=)")
        clash = set(self.system_sections()) & (set(self.baseline_sections()) | {"model", *PROBE_MODES})
        if clash:
            raise ValueError(f"system labels {sorted(clash)} are taken by a baseline, the model or a probe mode "
                             "(each names an output folder): set system.label / systems.<name>.label")

    def benchmark_sections(self) -> dict[str, BenchmarkConfig]:
        """The suite's benchmarks, else the single one under its label (or loader)."""
        return benchmark_sections(self.benchmark, self.benchmarks)

    def baseline_sections(self) -> dict[str, BaselineConfig]:
        if self.baselines:
            return dict(self.baselines)
        return {self.baseline.label or self.baseline.kind: self.baseline} if self.baseline is not None else {}

    def system_sections(self) -> dict[str, SystemConfig]:
        """The suite's systems, else the single one under its label (or kind)."""
        if self.systems:
            return dict(self.systems)
        return {self.system.label or self.system.kind: self.system} if self.system is not None else {}


def catalog_group(overrides: Sequence[str]) -> list[str]:
    """``overrides`` as evaluate.yaml's null catalog (a run's own) needs them: a catalog field (``catalog.path=...``)
    set without naming a catalog lands on the demo's section (``catalog=demo`` added, as before); each such field is
    set with ``++`` (a group file need not list every field; :func:`to_config` still refuses an unknown one)."""
    keys = [o.lstrip("+~").split("=", 1)[0] for o in overrides]
    out = [f"++{o}" if not o.startswith(("+", "~")) and k.startswith("catalog.") else o for o, k in zip(overrides, keys)]
    return [*out, "catalog=demo"] if out != list(overrides) and "catalog" not in keys else out


def catalog_section(catalog: Optional[CatalogConfig], run: Optional[str]) -> CatalogConfig:
    """evaluate.py's ``catalog`` made explicit: as given, else the run's own section (``run=``), else the demo's."""
    if catalog is not None:
        return catalog
    from toolsense.utils.rundir import RunDir

    return RunDir(run).require().section("catalog", CatalogConfig) if run else CatalogConfig()


def register_configs() -> None:
    """Register :class:`EvaluateConfig` as ``evaluate_schema`` (evaluate.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("evaluate_schema", EvaluateConfig)


def compose_evaluate(overrides: Sequence[str] = (), layers: Sequence[Layer] = ()) -> EvaluateConfig:
    """evaluate.yaml composed with ``overrides`` as ``toolsense-evaluate`` would compose it, typed:
    the one composition of every caller outside evaluate.py (the evaluation after training, its
    leakage check, the paper's rows, the exports); then each of ``layers`` laid over it
    (``utils/config.py: lay_over``: values merged, labels of benchmarks / baselines / systems left out)."""
    from toolsense.utils.compose import compose
    from toolsense.utils.config import lay_over, to_config, to_plain

    register_configs()
    data = to_plain(compose("evaluate", catalog_group(overrides)))
    return to_config(EvaluateConfig, lay_over(data, layers, EvaluateConfig, ("benchmarks", "baselines", "systems")))
