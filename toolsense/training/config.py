"""The training config tree (``conf/train.yaml``): typed dataclasses with help text, registered
in Hydra's ConfigStore as the schema of every composed train config.

Hydra checks keys, types and enum choices while composing; cross-field combinations fail in
``__post_init__`` with a message naming the field. :func:`to_train_config` builds the
:class:`TrainConfig` (running every check), which ``train.py`` does before loading any model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, Optional

from toolsense.catalog.config import CatalogConfig
from toolsense.data.memorization import MemorizationConfig, check_formats
from toolsense.data.prompts import PromptConfig
from toolsense.data.sources import QuerySource
from toolsense.index.config import IndexConfig
from toolsense.models.config import ModelConfig
from toolsense.tracking import LoggerConfig, LoggerKind  # noqa: F401  (re-exported: training's logger section)
from toolsense.utils.choices import StrEnum, choice
from toolsense.utils.config import Range, Seed


class MultiTool(StrEnum):
    split = "split"
    joint = "joint"


class OnUnknownTool(StrEnum):
    error = "error"
    skip = "skip"


class TuningMethod(StrEnum):
    lora = "lora"
    full = "full"


class EmbeddingRows(StrEnum):
    all = "all"
    virtual = "virtual"


class Batching(StrEnum):
    auto = "auto"
    padding_free = "padding_free"
    length_grouped = "length_grouped"
    padded = "padded"


class HeadKind(StrEnum):
    tokens = "tokens"
    toolken = "toolken"


class Precision(StrEnum):
    auto = "auto"
    bf16 = "bf16"
    fp32 = "fp32"


@dataclass
class StageSchedule:
    """Optimisation settings of one stage. A stage is sized either in epochs (``max_steps=-1``:
    ``epochs`` passes over the stage's examples, the number of steps following from the data and
    ``trainer.effective_batch``) or in optimiser steps (``max_steps`` > 0, which overrides
    ``epochs``). Stage 1 sized in epochs sees every memorization format equally often whatever the
    mix (``memorization.format_epochs`` weights one format against the others)."""

    enabled: bool = True
    """Run this stage (stage1.enabled=false with stage2.init_from runs Stage 2 only)."""
    epochs: float = 1.0
    """Passes over the stage's examples (> 0; a fraction trains on part of one pass); used when max_steps=-1."""
    max_steps: Annotated[int, Range(-1)] = -1
    """> 0 overrides epochs (a few steps for smoke tests); -1 = size the stage by epochs."""
    learning_rate: float = 2e-5
    """Peak learning rate (> 0)."""
    lr_scheduler: str = "cosine"
    warmup_ratio: float = 0.03
    """Linear warmup over this fraction of the stage's optimiser steps, in [0, 1) (transformers
    reads a warmup_steps value >= 1 as a step count, so 1.0 would mean one step, not all)."""

    def check(self, name: str) -> None:
        """Refuse values no stage can train with, naming ``<name>.<field>`` (run from
        ``TrainConfig.__post_init__``, before any model loads)."""
        if not 0 < self.epochs < math.inf:
            raise ValueError(f"{name}.epochs must be > 0 and finite (passes over the stage's examples), got {self.epochs}")
        if self.max_steps != -1 and self.max_steps < 1:
            raise ValueError(f"{name}.max_steps must be >= 1, or -1 to size the stage by {name}.epochs; got {self.max_steps}")
        if not self.learning_rate > 0:
            raise ValueError(f"{name}.learning_rate must be > 0, got {self.learning_rate}")
        if not math.isfinite(self.learning_rate):
            raise ValueError(f"{name}.learning_rate must be finite, got {self.learning_rate}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"{name}.warmup_ratio must be in [0, 1) (a fraction of the stage's steps), got {self.warmup_ratio}")


@dataclass
class Stage2Config(StageSchedule):
    sources: list[QuerySource] = field(default_factory=lambda: [QuerySource()])
    """Where Stage-2 queries come from (``conf/stage2/*.yaml``)."""
    multi_tool: MultiTool = MultiTool.split
    """A query with several gold tools: one example per tool, or one listing all of them."""
    on_unknown_tool: OnUnknownTool = OnUnknownTool.error
    max_queries: Annotated[int, Range(-1)] = -1
    """> 0 keeps only the first N queries (smoke tests)."""
    init_from: Optional[str] = None
    """Start Stage 2 from this model folder instead of this run's Stage-1 output."""

    def __post_init__(self) -> None:
        self.multi_tool = choice(MultiTool, self.multi_tool, "stage2.multi_tool")
        self.on_unknown_tool = choice(OnUnknownTool, self.on_unknown_tool, "stage2.on_unknown_tool")
        if self.max_queries != -1 and self.max_queries < 1:
            raise ValueError(f"stage2.max_queries must be >= 1, or -1 to keep every query; got {self.max_queries}")


@dataclass
class TuningConfig:
    method: TuningMethod = TuningMethod.lora
    """lora: adapters on every linear projection + trainable embedding rows (embedding_rows);
    full: all weights."""
    r: int = 64
    alpha: int = 128
    dropout: float = 0.0
    target_modules: str = "all-linear"
    """PEFT target_modules; all-linear = every linear projection of the language model except the LM
    head (a multimodal checkpoint's vision tower and projector are left out: tuning.lora_targets)."""
    embedding_rows: EmbeddingRows = EmbeddingRows.all
    """LoRA only: which rows of the (tied) embedding and LM-head matrices train beside the adapters.
    all: the whole matrices — the paper's LoRA "with trainable embeddings", where base-vocabulary
    rows drift slightly (D_rel 0.0015, 22.9x less than the virtual rows); virtual: only the new
    tool-token rows, the base vocabulary (the A-D / Yes-No rows the probes read included) stays
    bit-identical — an ablation that keeps embedding drift out of a retention comparison, and the
    CPU demo's setting (its README numbers were measured with it). Full fine-tuning trains every row."""
    embedding_lr_scale: float = 1.0
    """Learning-rate multiplier for the embedding / LM-head matrices (under embedding_rows=virtual
    that is the virtual-token rows; under all, every row). New rows start at sub-token means, far
    from where they must end, so short runs learn them much faster with a larger step; 1.0 = one
    learning rate for all."""

    def __post_init__(self) -> None:
        self.method = choice(TuningMethod, self.method, "tuning.method")
        self.embedding_rows = choice(EmbeddingRows, self.embedding_rows, "tuning.embedding_rows")
        if self.method == "full" and self.embedding_rows == "virtual":
            raise ValueError("tuning.embedding_rows=virtual freezes base-vocabulary rows under LoRA only; full fine-tuning "
                             "trains every weight (set tuning.embedding_rows=all or tuning=lora)")
        if self.embedding_lr_scale <= 0:
            raise ValueError(f"tuning.embedding_lr_scale must be > 0, got {self.embedding_lr_scale}")
        if self.method == "lora" and self.r < 1:
            raise ValueError(f"tuning.r must be >= 1 for LoRA, got {self.r}")
        if self.method == "lora" and not self.alpha > 0:
            raise ValueError(f"tuning.alpha must be > 0 for LoRA, got {self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"tuning.dropout must be in [0, 1), got {self.dropout}")


TOOLKEN_FORMATS = ("desc2tok",)
"""Stage-1 formats a toolken can learn from: the answer is one tool (the others read or write
tool tokens as inputs, descriptions, or path prefixes)."""


@dataclass
class HeadConfig:
    """How the model names a tool (``conf/head/*.yaml``)."""

    kind: HeadKind = HeadKind.tokens
    """tokens: ToolGen's virtual tokens in the vocabulary, learnt through Stage 1 / Stage 2 with
    the tuning section; toolken: a ToolkenGPT-style head, the base LM frozen and one trainable
    output row per tool fitted on the Stage-2 data (``training/toolken.py``, docs/guides/systems.md)."""
    batch_size: int = 8
    """toolken only: prompts per forward pass of the frozen LM when reading their answer states."""
    formats: list[str] = field(default_factory=list)
    """toolken only: Stage-1 memorization formats whose examples also train the rows, beside the
    Stage-2 pairs. Only the formats whose answer is one tool apply: desc2tok (the tool's text in,
    its toolken out; its template is ``memorization.desc2tok_template``)."""

    def __post_init__(self) -> None:
        self.kind = choice(HeadKind, self.kind, "head.kind")
        if self.batch_size < 1:
            raise ValueError(f"head.batch_size must be >= 1, got {self.batch_size}")
        bad = [f for f in self.formats if f not in TOOLKEN_FORMATS]
        if bad:
            raise ValueError(f"head.formats={list(self.formats)}: {bad[0]!r} does not end in one tool; a toolken head "
                             f"can learn only from {list(TOOLKEN_FORMATS)}")


@dataclass
class TrainerConfig:
    effective_batch: int = 1024
    """Examples per optimiser step over all processes (ToolGen: 1024); split as
    per_device_batch x grad_accum x world_size."""
    per_device_batch: int = 8
    max_length: int = 1024
    precision: Precision = Precision.auto
    """auto: bf16 where the hardware has it, fp32 on CPU."""
    batching: Batching = Batching.auto
    """padding_free: a batch is one row of concatenated examples with per-example positions
    (block-diagonal attention; efficient with varlen kernels, i.e. flash_attention_*);
    length_grouped: batches of similar-length examples padded to their longest (efficient
    with sdpa/eager, whose block-diagonal masks cost O(total length^2)); padded: random batches
    padded to their longest (the baseline); auto: padding_free under flash attention, else
    length_grouped."""
    gradient_checkpointing: bool = False
    deepspeed: Optional[dict[str, Any]] = None
    """A DeepSpeed config (``trainer=ds_zero2|ds_zero3``); None trains without DeepSpeed."""
    use_cpu: bool = False
    save_steps: int = 200
    """Checkpoint every N optimiser steps (a rerun resumes from the last one)."""
    save_total_limit: int = 2
    logging_steps: int = 10
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    seed: Seed = 42
    dataloader_num_workers: int = 0

    def __post_init__(self) -> None:
        self.batching = choice(Batching, self.batching, "trainer.batching")
        self.precision = choice(Precision, self.precision, "trainer.precision")
        for name in ("effective_batch", "per_device_batch", "max_length", "save_steps", "logging_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"trainer.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("weight_decay", "max_grad_norm", "dataloader_num_workers"):
            if getattr(self, name) < 0:
                raise ValueError(f"trainer.{name} must be >= 0, got {getattr(self, name)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            raise ValueError(f"trainer.seed must be an integer in [0, 2**32 - 1] (numpy's seed range), got {self.seed!r}")
        if self.save_total_limit is not None and self.save_total_limit < 1:
            raise ValueError(f"trainer.save_total_limit must be >= 1 (checkpoints kept; a rerun resumes from the last), "
                             f"got {self.save_total_limit}")


@dataclass
class StageEvaluation:
    """How one stage's evaluation differs from ``evaluate``'s own (``evaluate.stage1.skip=[mcq,qa]``
    scores Stage 1 on retrieval alone); applied after ``evaluate.skip`` / ``evaluate.settings``."""

    skip: list[str] = field(default_factory=list)
    """Labels of benchmarks, baselines or systems not scored at this stage."""
    settings: dict[str, Any] = field(default_factory=dict, metadata={"open": True})
    """evaluate.py values for this stage only (``evaluate.stage1.settings.probe.modes=[token]``)."""


@dataclass
class EvaluateAfterConfig:
    """Evaluate the run once it has trained (``<run dir>/eval``) with evaluate.py's own config, typed:
    the YAML options it selects (``evaluate.suite=demo``, ``evaluate.benchmarks.rrb=rrb``,
    ``evaluate.decoding=beam10``), the labels it leaves out (``evaluate.skip=[mcq,qa]``) and evaluate.py
    values over them (``evaluate.settings.benchmarks.rrb.limit=50``). In a sweep, every job then
    evaluates its own run and the sweep ends with one comparison table. ``toolsense/pipeline.py:
    evaluation_plan`` composes each evaluation's ``EvaluateConfig`` once, before training, so a bad
    option, label or value fails naming it before Stage 1."""

    suite: Optional[str] = None
    """An evaluate.py suite (conf/suite/); None and no ``benchmarks`` = do not evaluate."""
    benchmarks: dict[str, str] = field(default_factory=dict, metadata={"open": True})
    """label -> conf/benchmark option scored too (``evaluate.benchmarks.rrb=rrb``)."""
    baselines: dict[str, str] = field(default_factory=dict, metadata={"open": True})
    """label -> conf/baseline option run too (``evaluate.baselines.bm25=bm25``)."""
    decoding: Optional[str] = None
    """A conf/decoding option (beam10); None = evaluate.yaml's (beam50)."""
    skip: list[str] = field(default_factory=list)
    """Labels of the suite's benchmarks, baselines or systems not scored (``evaluate.skip=[mcq,qa]``)."""
    settings: dict[str, Any] = field(default_factory=dict, metadata={"open": True})
    """evaluate.py values over what the options compose, as its keys nest
    (``evaluate.settings.metrics.resamples=100``, ``evaluate.settings.benchmarks.mcq.limit=32``)."""
    drift: bool = False
    """Also measure embedding drift base -> stage1 -> stage2 (evaluate.py task=drift) into
    ``<run dir>/eval/drift``; the sweep's comparison table then shows it per run."""
    stages: list[str] = field(default_factory=lambda: ["stage2"])
    """Checkpoints evaluated: stage2 into ``<run dir>/eval``, stage1 into ``<run dir>/eval/stage1``.
    ``[stage1,stage2]`` gives the comparison table its knowledge-retention columns (probe accuracy
    after Stage 2 minus after Stage 1)."""
    stage1: StageEvaluation = field(default_factory=StageEvaluation)
    stage2: StageEvaluation = field(default_factory=StageEvaluation)

    @property
    def scores(self) -> bool:
        """Whether anything is scored after training (a suite or a benchmark is selected)."""
        return self.suite is not None or bool(self.benchmarks)

    def __post_init__(self) -> None:
        bad = [s for s in self.stages if s not in ("stage1", "stage2")]
        if bad or not self.stages or len(set(self.stages)) != len(self.stages):
            raise ValueError(f"evaluate.stages must list stage1 and/or stage2, each once; got {list(self.stages)}")
        for stage in ("stage1", "stage2"):
            section = getattr(self, stage)
            if (section.skip or section.settings) and stage not in self.stages:
                raise ValueError(f"evaluate.{stage} is set, but {stage} is not in evaluate.stages={list(self.stages)}")


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    catalog: CatalogConfig = field(default_factory=CatalogConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    prompts: PromptConfig = field(default_factory=PromptConfig)
    """The retrieval prompt of Stage 2, saved with the run so evaluation poses queries the same
    way (TG sets prompts.use_system_prompt=false, as ToolGen)."""
    memorization: MemorizationConfig = field(default_factory=MemorizationConfig)
    stage1: StageSchedule = field(default_factory=StageSchedule)
    stage2: Stage2Config = field(default_factory=Stage2Config)
    tuning: TuningConfig = field(default_factory=TuningConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    experiment: str = "tg"
    """Experiment name (tg, tg_h, tg_3fm, tg_5fm, ...): W&B group and run-name prefix."""
    output_dir: Optional[str] = None
    """The run directory; None = Hydra's output dir."""
    evaluate: EvaluateAfterConfig = field(default_factory=EvaluateAfterConfig)
    head: HeadConfig = field(default_factory=HeadConfig)
    """tokens (ToolGen, the default) or toolken (a frozen LM + one output row per tool)."""

    def __post_init__(self) -> None:
        if self.head.kind == "toolken":
            check_toolken(self)
        check_formats(self.memorization.formats, self.index.scheme)
        self.stage1.check("stage1")
        self.stage2.check("stage2")
        if not self.stage1.enabled and not self.stage2.enabled:
            raise ValueError("stage1.enabled and stage2.enabled are both false: nothing to train")
        off = [st for st in self.evaluate.stages if not getattr(self, st).enabled]
        if off and self.evaluate.scores:
            raise ValueError(f"evaluate.stages lists {off}, but {off[0]}.enabled is false: that checkpoint is not trained")
        if (self.tuning.method == "lora" and self.trainer.deepspeed
                and self.trainer.deepspeed.get("zero_optimization", {}).get("stage") == 3):
            raise ValueError(
                "tuning.method=lora with trainer=ds_zero3: after each stage the adapters are merged and the trained "
                "embedding rows saved from unpartitioned weights, and tuning.embedding_rows=virtual masks gradient rows of "
                "the embedding, neither of which ZeRO-3's partitioned parameters allow; use trainer=ds_zero2 or tuning=full"
            )


def check_toolken(cfg: "TrainConfig") -> None:
    """What a toolken head cannot do, refused naming the field: it is one row per tool (a flat
    index), trains on Stage-2 data only, and is evaluated as a system (evaluate.py system=toolken)."""
    if cfg.index.builder != "flat":
        raise ValueError(f"head.kind=toolken has one output row per tool: it needs index=flat, got index.builder={cfg.index.builder}")
    if cfg.stage1.enabled:
        raise ValueError("head.kind=toolken trains on the Stage-2 data (Stage 1 as a stage trains token rows): set "
                         "stage1.enabled=false (experiment=toolken does); head.formats=[desc2tok] adds the one Stage-1 format that applies")
    if not cfg.stage2.enabled:
        raise ValueError("head.kind=toolken trains on the Stage-2 data: stage2.enabled must be true")
    if cfg.stage2.multi_tool != "split":
        raise ValueError("head.kind=toolken predicts one toolken per example: stage2.multi_tool must be split")
    if cfg.evaluate.scores or cfg.evaluate.drift:
        raise ValueError("head.kind=toolken: evaluate.* after training is for token runs; evaluate the head with "
                         "python evaluate.py system=toolken system.run=<this run> parametric=false "
                         "(docs/guides/systems.md)")


def register_configs() -> None:
    """Register the schema under the name ``train_schema`` (train.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("train_schema", TrainConfig)


def to_train_config(cfg: Any) -> TrainConfig:
    """A composed DictConfig → a checked :class:`TrainConfig` (every ``__post_init__`` runs)."""
    from toolsense.utils.config import to_config

    return to_config(TrainConfig, cfg)
