"""A pilot's regime rule (a study's ``analysis.regime``), beside the code that reads it (regime.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RegimeRule:
    """The regime a pilot must reach before a study is judged in it (issue 47: a finding in a regime the
    paper never ran tests nothing), registered with the plan before the pilot's data. Each arm is one
    sweep of ``curves`` (one run whose Stage-2 checkpoints give its curve against epochs)."""

    metric: str = "Rc"
    """The retrieval metric (without its @k) the rule reads, constrained decoding."""
    k: int = 5
    benchmark: str = "standard"
    """The benchmark label the rule reads."""
    min_score: dict[str, float] = field(default_factory=dict)
    """Arm (a sweep of ``curves``) -> the least score after Stage 2 (a proportion: 0.85 = 85%)."""
    min_tools: int = 1000
    """The catalog must hold at least this many tools (a small catalog makes the regime trivial)."""
    max_run_hours: float = 1.0
    """A setting qualifies only where one run of it takes at most this long on ``cores`` cores."""
    cores: int = 2
    max_runs: int = 6
    """The pilot's budget in runs."""
    fallback: str = ("the best setting within the budget, with its gap to each arm's threshold said")
    """What is chosen when no setting meets every rule."""

    def check(self) -> None:
        bad = {a: v for a, v in self.min_score.items() if not 0 < v <= 1}
        if bad or not self.min_score:
            raise ValueError(f"analysis.regime.min_score: arm -> a proportion in (0, 1], at least one arm; got {dict(self.min_score)}")
        if self.k < 1 or self.min_tools < 1 or not self.max_run_hours > 0 or self.cores < 1 or self.max_runs < 1:
            raise ValueError(f"analysis.regime: k, min_tools, cores and max_runs must be >= 1 and max_run_hours > 0; got "
                             f"k={self.k}, min_tools={self.min_tools}, max_run_hours={self.max_run_hours}, cores={self.cores}, "
                             f"max_runs={self.max_runs}")
