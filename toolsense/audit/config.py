"""The audit's typed config (``conf/audit.yaml`` + ``conf/audit/*``), built from Hydra's
DictConfig with unknown keys and bad values reported by their dotted field name."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal, Optional

from toolsense.audit.dilution import DilutionConfig
from toolsense.audit.generator import GeneratorConfig
from toolsense.audit.prompting import AuditPromptConfig
from toolsense.audit.pt2d import PT2DConfig
from toolsense.audit.redaction import RedactionConfig, TokenClassConfig
from toolsense.audit.scorers import ScorerConfig
from toolsense.models import ModelConfig
from toolsense.utils.config import Range, Seed, to_config

ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass
class FinetuneConfig:
    """The LoRA fine-tune before scoring (``finetune.*``; ``finetune.py`` runs it)."""

    enabled: Optional[bool] = None
    """Fine-tune before scoring; the adapter then becomes scorer.adapter. None = only in demo mode
    with the hf scorer."""
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    target_modules: list[str] = field(default_factory=lambda: list(ALL_LINEAR))
    last_layers: Optional[int] = 6
    """Adapt only the last N transformer layers (None = all)."""
    cache_frozen: bool = True
    """With last_layers set: compute the frozen layers' output once per example and train the
    adapted layers on it (a step then costs about last_layers/num_layers of a full one)."""
    loss_on: Literal["label", "answer"] = "label"
    """label: train only the answer tokens where the positive and negative answers differ (the
    digit), given the answer prefix; answer: every answer token, end of turn included."""
    lr: float = 2e-3
    steps: int = 200
    """Optimizer steps (constant LR after a 10% warm-up, linear decay to 0)."""
    batch_size: int = 8
    """Even sizes give class-balanced batches (half positive, half negative)."""
    max_length: int = 384
    """Longer examples are cut from the left of the prompt (the answer is always kept)."""
    positive_answer: Annotated[int, Range(1, 10, why="an answer on the prompt's 1-10 scale")] = 9
    negative_answer: Annotated[int, Range(1, 10, why="an answer on the prompt's 1-10 scale")] = 2
    seed: Seed = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 2:
            raise ValueError("finetune.steps must be >= 1 and finetune.batch_size >= 2")
        if self.positive_answer == self.negative_answer:
            raise ValueError("finetune.positive_answer and finetune.negative_answer must differ")
        if self.loss_on not in ("label", "answer"):
            raise ValueError(f"finetune.loss_on must be label or answer, got {self.loss_on!r}")
        if self.last_layers is not None and self.last_layers < 1:
            raise ValueError("finetune.last_layers must be >= 1 or null (all layers)")


@dataclass
class DataConfig:
    path: Optional[str] = None
    """Trace JSONL; ignored in demo mode (the generated traces are used)."""
    id_field: str = "id"
    label_field: str = "label"
    """Binary label, 0/1 (or false/true)."""
    partition_field: str = "cluster"
    """Partition / cluster of each record: fit on some, evaluate on the others."""
    tools_field: str = "tools"
    """Ordered list of {tool, text} tool results."""
    prompt_fields: list[str] = field(default_factory=lambda: ["question"])
    """Other prompt-bearing string fields (used by the scorer template and redacted too)."""
    tools: Optional[list[str]] = None
    """The tool universe and its order; None = order of first appearance in the file."""
    on_missing_tool: Literal["empty", "error"] = "empty"
    """A record without a tool others have: an empty section, or an error naming file:line."""
    fit_partitions: list[str] = field(default_factory=lambda: ["0"])
    eval_partitions: Optional[list[str]] = None
    """None = every partition not in fit_partitions."""

    def __post_init__(self) -> None:
        if self.on_missing_tool not in ("empty", "error"):
            raise ValueError(f"data.on_missing_tool must be empty or error, got {self.on_missing_tool!r}")
        self.fit_partitions = [str(p) for p in self.fit_partitions]
        if self.eval_partitions is not None:
            self.eval_partitions = [str(p) for p in self.eval_partitions]


@dataclass
class StatsConfig:
    n_boot: int = 1000
    """Bootstrap resamples for every CI."""
    level: Annotated[float, Range(0, 1, low_open=True, high_open=True, why="a confidence level")] = 0.95
    seed: Seed = 0

    def __post_init__(self) -> None:
        if not 0 < self.level < 1:
            raise ValueError(f"stats.level must be in (0, 1), got {self.level}")


@dataclass
class AuditConfig:
    mode: Literal["audit", "demo"] = "audit"
    """demo: generate the synthetic traces into output_dir and audit them (fine-tune included).
    Set by the config group audit/mode (conf/audit/mode/demo.yaml also sets the demo's fine-tune)."""
    output_dir: str = "outputs/audit"
    data: DataConfig = field(default_factory=DataConfig)
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    pt2d: PT2DConfig = field(default_factory=PT2DConfig)
    dilution: DilutionConfig = field(default_factory=DilutionConfig)
    prompt: AuditPromptConfig = field(default_factory=AuditPromptConfig)
    redaction: RedactionConfig = field(default_factory=RedactionConfig)
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    """The scorer's (and fine-tune's) base checkpoint: conf/model/*.yaml."""

    def __post_init__(self) -> None:
        if self.mode not in ("audit", "demo"):
            raise ValueError(f"mode must be audit or demo, got {self.mode!r}")
        if self.mode == "audit" and not self.data.path:
            raise ValueError("data.path is required (or run the demo: python audit.py audit/mode=demo)")
        if self.finetune.enabled is None:
            self.finetune.enabled = self.mode == "demo" and self.scorer.kind == "hf"
        if self.scorer.kind == "hf" and self.scorer.method is None:
            self.scorer.method = "answer_probs" if self.mode == "demo" else "generate"
        if self.scorer.method == "answer_probs":
            from toolsense.audit.prompting import ANSWER_CHOICES

            if self.prompt.parser not in ANSWER_CHOICES:
                raise ValueError(f"scorer.method=answer_probs needs a prompt.parser with answer choices "
                                 f"{sorted(ANSWER_CHOICES)}, got {self.prompt.parser!r}")
        if self.finetune.enabled and self.scorer.kind != "hf":
            raise ValueError("finetune.enabled needs scorer.kind=hf (the adapter is scored locally)")


def register_configs() -> None:
    """Register :class:`AuditConfig` as ``audit_schema`` (audit.yaml's first default): the
    dataclasses hold every default, audit.yaml only what differs."""
    from toolsense.utils.hydra import register_schema

    register_schema("audit_schema", AuditConfig)


def audit_config(cfg) -> AuditConfig:
    """From a Hydra DictConfig (or a plain dict) to a validated AuditConfig."""
    return to_config(AuditConfig, cfg)


__all__ = ["AuditConfig", "DataConfig", "StatsConfig", "TokenClassConfig", "audit_config", "register_configs"]
