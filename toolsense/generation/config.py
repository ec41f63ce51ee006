"""Schema of ``conf/generate.yaml``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from toolsense.catalog.config import CatalogConfig
from toolsense.generation.llm import LLMConfig
from toolsense.tracking import LoggerConfig
from toolsense.utils.choices import StrEnum


class OnExists(StrEnum):
    resume = "resume"
    error = "error"


@dataclass
class GenerateConfig:
    catalog: CatalogConfig = field(default_factory=CatalogConfig)
    writer: LLMConfig = field(default_factory=LLMConfig)
    """The LLM that writes items."""
    judge: Optional[LLMConfig] = None
    """The LLM that validates items; None = the writer judges (at temperature 0); set judge_enabled=false to skip."""
    judge_enabled: bool = True
    tasks: list[str] = field(default_factory=lambda: ["rrb", "mcq", "qa"])
    """Which benchmarks to produce: any of rrb, mcq, qa."""
    rrb_per_tier: dict[str, int] = field(default_factory=lambda: {"easy": 10, "medium": 10, "hard": 10})
    pool_size: int = 14
    """RRB candidate pool (analyzed_tools) size, gold included, as in the released benchmark."""
    medium_min_sim: float = 0.55
    """Cosine similarity above which another service's tool counts as an equivalent (medium tier)."""
    judge_min_precision: float = 0.5
    """RRB: share of the judge's selected tools that must be gold."""
    n_probes: int = 20
    """MCQ and QA items each (QA alternates Yes/No targets)."""
    max_attempts: int = 3
    """Writer attempts per item before it is recorded as rejected."""
    concurrency: int = 1
    """Items made at once, in threads (for API writers/judges, whose calls wait on the network);
    files are still written in plan order, and the result equals a sequential run's except
    that two concurrent items writing the same query are caught at acceptance, not retried."""
    seed: int = 0
    encoder: Optional[str] = None
    """Sentence encoder for hard negatives; None = embedded all-MiniLM-L6-v2."""
    output_dir: Optional[str] = None
    """Where the files go; None = ``<output_root>/<catalog hash>-<config hash>``, so rerunning
    the same command resumes it. A directory made with another config is refused, naming the
    differing fields."""
    output_root: str = "outputs/generate"
    on_exists: OnExists = OnExists.resume
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    """Also log the summary's gen/ counts to a tracker (``logger=wandb``); not part of the identity."""
    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    """USD per million tokens by model name, ``{gpt-4o-mini: {input: 0.15, output: 0.6}}``,
    for the estimated cost in ``summary.json`` / ``data_card.md``."""

    def __post_init__(self) -> None:
        bad = [t for t in self.tasks if t not in ("rrb", "mcq", "qa")]
        if bad:
            raise ValueError(f"tasks: unknown {bad}; choose from rrb, mcq, qa")
        bad_tiers = [t for t in self.rrb_per_tier if t not in ("easy", "medium", "hard")]
        if bad_tiers:
            raise ValueError(f"rrb_per_tier: unknown tiers {bad_tiers}; choose from easy, medium, hard")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        local = [r for r, llm in (("writer", self.writer), ("judge", self.judge)) if llm is not None and llm.backend == "hf"]
        if self.concurrency > 1 and local:
            raise ValueError(f"concurrency={self.concurrency}: {local[0]}.backend=hf runs one local model in this process; "
                             "threads would only contend for it (use concurrency=1, or an openai-compatible server)")
        for name, price in self.prices.items():
            if set(price) != {"input", "output"}:
                raise ValueError(f"prices.{name}: give exactly input and output (USD per million tokens), got {sorted(price)}")
        if self.pool_size < 2:
            raise ValueError(f"pool_size must be >= 2, got {self.pool_size}")


def register_configs() -> None:
    """Register :class:`GenerateConfig` as ``generate_schema`` (generate.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("generate_schema", GenerateConfig)
