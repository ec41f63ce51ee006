"""Schema of ``conf/generate.yaml``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from toolsense.catalog.config import CatalogConfig
from toolsense.generation.llm import LLMConfig
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
    output_dir: str = "outputs/generate"
    on_exists: OnExists = OnExists.resume

    def __post_init__(self) -> None:
        bad = [t for t in self.tasks if t not in ("rrb", "mcq", "qa")]
        if bad:
            raise ValueError(f"tasks: unknown {bad}; choose from rrb, mcq, qa")
        bad_tiers = [t for t in self.rrb_per_tier if t not in ("easy", "medium", "hard")]
        if bad_tiers:
            raise ValueError(f"rrb_per_tier: unknown tiers {bad_tiers}; choose from easy, medium, hard")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.pool_size < 2:
            raise ValueError(f"pool_size must be >= 2, got {self.pool_size}")
