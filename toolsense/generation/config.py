"""Schema of ``conf/generate.yaml``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from toolsense.catalog.config import CatalogConfig
from toolsense.generation.llm import LLMConfig
from toolsense.generation.prompts import RUBRIC
from toolsense.tracking import LoggerConfig
from toolsense.utils.choices import StrEnum, choice
from toolsense.utils.config import Seed, Share
from toolsense.utils.errors import ConfigError


class OnExists(StrEnum):
    resume = "resume"
    error = "error"


class FNPolicy(StrEnum):
    relabel = "relabel"
    reject = "reject"


class ClonePolicy(StrEnum):
    exclude = "exclude"
    gold = "gold"


class Purpose(StrEnum):
    benchmark = "benchmark"
    training = "training"


def _default_shots(tier: str):
    def load() -> list[str]:
        import yaml

        return list(yaml.safe_load((Path(__file__).parent / "few_shot.yaml").read_text())[tier])

    return field(default_factory=load)


@dataclass
class FewShotConfig:
    """Example requests shown to the RRB writer, per tier (short, intent-focused, no tool
    names); defaults from ``toolsense/generation/few_shot.yaml``."""

    easy: list[str] = _default_shots("easy")
    medium: list[str] = _default_shots("medium")
    hard: list[str] = _default_shots("hard")


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
    pool_k: int = 13
    """RRB pool P(τ) = the anchor plus its ``pool_k`` nearest tools by cosine (the paper's K=13:
    14 candidates, the released ``analyzed_tools`` size)."""
    few_shot: FewShotConfig = field(default_factory=FewShotConfig)
    rubric_min: dict[str, int] = field(default_factory=lambda: {"naturalness": 3, "tier_compliance": 3, "label_correctness": 4})
    """RRB: the judge's lowest acceptable score (1-5) per rubric criterion."""
    fn_policy: FNPolicy = FNPolicy.relabel
    """RRB: a pool tool the judge finds also fulfils the query but is not labelled: ``relabel``
    adds it to the gold (rejected if the set then no longer fits the tier), ``reject`` drops the item."""
    clones: ClonePolicy = ClonePolicy.exclude
    """RRB: exact-text clones (same titles + description, another name): ``exclude`` keeps a
    clone of a pool tool out of the pool; ``gold`` keeps them and adds a gold tool's clones to the gold."""
    dedupe_cosine: Share = 0.9
    """MCQ/QA: a question whose embedding cosine to an accepted one of the same kind is at or above this is a near-duplicate."""
    purpose: Purpose = Purpose.benchmark
    """``training``: the output is Stage-2 data (``stage2.sources: [{kind: generated}]``): the leakage guard keeps every
    ``exclude`` benchmark's gold tools out of the anchors and answer sets, and its queries out of the items."""
    exclude: list[str] = field(default_factory=list)
    """Evaluation benchmark files (RRB / ``{query, tools}`` JSONL) held out of training data."""
    n_probes: int = 20
    """MCQ and QA items each (QA alternates Yes/No targets)."""
    max_attempts: int = 3
    """Writer attempts per item before it is recorded as rejected."""
    concurrency: int = 1
    """Items made at once, in threads (for API writers/judges, whose calls wait on the network);
    files are still written in plan order, and the result equals a sequential run's except
    that two concurrent items writing the same query are caught at acceptance, not retried."""
    seed: Seed = 0
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
        self._check_counts()
        local = [r for r, llm in (("writer", self.writer), ("judge", self.judge)) if llm is not None and llm.backend == "hf"]
        if self.concurrency > 1 and local:
            raise ValueError(f"concurrency={self.concurrency}: {local[0]}.backend=hf runs one local model in this process; "
                             "threads would only contend for it (use concurrency=1, or an openai-compatible server)")
        for name, price in self.prices.items():
            if set(price) != {"input", "output"}:
                raise ValueError(f"prices.{name}: give exactly input and output (USD per million tokens), got {sorted(price)}")
        if self.pool_k < 3:
            raise ValueError(f"pool_k must be >= 3 (the hard tier needs 4 tools in a pool), got {self.pool_k}")
        bad = sorted(set(self.rubric_min) - set(RUBRIC))
        if bad or not all(1 <= v <= 5 for v in self.rubric_min.values()):
            raise ValueError(f"rubric_min: keys must be among {list(RUBRIC)} with values 1-5, got {dict(self.rubric_min)}")
        self.fn_policy = choice(FNPolicy, self.fn_policy, "fn_policy")
        self.clones = choice(ClonePolicy, self.clones, "clones")
        self.purpose = choice(Purpose, self.purpose, "purpose")
        if not 0 < self.dedupe_cosine <= 1:
            raise ValueError(f"dedupe_cosine must be in (0, 1], got {self.dedupe_cosine}")
        if self.purpose == "training" and not self.exclude:
            raise ValueError("purpose=training: name the evaluation benchmarks to hold out in exclude=[...] "
                             "(the leakage guard keeps their gold tools and queries out of training data)")

    def _check_counts(self) -> None:
        """Counts and sizes, each named by its field, before anything loads (a bad value used to
        surface in numpy after the whole RRB had been generated)."""
        if not self.tasks:
            raise ValueError("tasks=[]: give at least one of rrb, mcq, qa")
        for tier, n in self.rrb_per_tier.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"rrb_per_tier.{tier}={n!r}: must be a whole number >= 0")
        for name, value, lo in (("n_probes", self.n_probes, 0), ("max_attempts", self.max_attempts, 1)):
            if value < lo:
                raise ValueError(f"{name}={value}: must be >= {lo}")
        planned = sum(self.rrb_per_tier.values()) * ("rrb" in self.tasks) + self.n_probes * len({"mcq", "qa"} & set(self.tasks))
        if not planned:
            raise ValueError(f"nothing to generate: tasks={list(self.tasks)} with rrb_per_tier={dict(self.rrb_per_tier)} "
                             f"and n_probes={self.n_probes} plan no item")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        for name, price in self.prices.items():
            if any(v < 0 for v in price.values()):
                raise ValueError(f"prices.{name}={dict(price)}: prices must be >= 0 (USD per million tokens)")


def register_configs() -> None:
    """Register :class:`GenerateConfig` as ``generate_schema`` (generate.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("generate_schema", GenerateConfig)


def check_judge_overrides(argv: Sequence[str]) -> None:
    """Refuse ``judge.<field>=...`` without ``judge=<backend>``: with no judge chosen the writer judges,
    and Hydra cannot set a field of an unset section (its error names no field)."""
    fields = [a for a in argv if re.match(r"^\+{0,2}judge\.", a)]
    if fields and not any(re.match(r"^\+{0,2}judge=", a) for a in argv):
        raise ConfigError(f"{fields[0]}: no judge is chosen (by default the writer judges); choose one first, "
                         f"e.g. judge=openai {fields[0].lstrip('+')} (conf/judge/: openai, hf, local)")
