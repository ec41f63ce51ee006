"""The analysis plan's schema (``StudyConfig.analysis``, ``conf/study/<name>.yaml``'s ``analysis:``): every rule a
verdict follows, fixed before the data. A field added after plans were registered is left out of the plan's hash at
its default (registration.py: ``LATER``), so those plans keep their hashes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from toolsense.curves.config import RegimeRule
from toolsense.metrics.registry import METRICS

Scale = Literal["pp", "normalized", "log_odds", "drift_absolute", "drift_base_normalized", "balanced"]


@dataclass
class PowerRule:
    """The seeds per arm a paired difference of arm means needs (plan/seeds.py: ``seeds_needed``), with the
    numbers it rests on and where they came from; the report prints it beside the seeds each arm has."""

    between_seed_sd: float = 0.0
    """SD across seeds of a run's paired difference (a proportion: 0.06 = 6 pp), e.g. from a pilot's seeds."""
    within_seed_se: float = 0.0
    """Standard error of that difference over the items, shared by every seed (the same items in every run)."""
    effect: float = 0.05
    """The difference to detect (a proportion)."""
    alpha: float = 0.05
    """Two-sided level of the verdict's interval."""
    power: float = 0.8
    """The chance of an interval excluding zero when the difference is ``effect``."""
    method: Literal["t", "normal"] = "t"
    """t: t quantiles on the Welch–Satterthwaite degrees of freedom of the seeds' and the items' parts, as the verdict's
    interval has; normal: z quantiles (closed form)."""
    items: int = 0
    """The items ``within_seed_se`` is over (its part has items − 1 degrees of freedom); 0: infinitely many."""
    source: str = ""
    """Where the SD and SE came from (a pilot, a study and its commit)."""

    def check(self, where: str) -> None:
        if self.between_seed_sd < 0 or self.within_seed_se < 0 or not 0 < self.effect < 1:
            raise ValueError(f"{where}: between_seed_sd and within_seed_se must be >= 0 and effect in (0, 1) (proportions), "
                             f"got {self.between_seed_sd}, {self.within_seed_se}, {self.effect}")
        if not (0 < self.alpha < 1 and 0 < self.power < 1) or self.method not in ("t", "normal"):
            raise ValueError(f"{where}: alpha and power must lie in (0, 1) and method be t or normal, got "
                             f"{self.alpha}, {self.power}, {self.method!r}")
        if self.items == 1 or self.items < 0:
            raise ValueError(f"{where}.items must be 0 (infinitely many) or >= 2, got {self.items}")


@dataclass
class FindingRule:
    """How one finding is decided, fixed before the data (the study's ``analysis.findings.<n>``)."""

    metric: str = "Rc"
    """Rc | Rf | IS (a registered retrieval metric without its @k, metrics/registry.py) | accuracy | drift:
    the measure the verdict reads."""
    k: int = 5
    """Its cut-off (retrieval metrics)."""
    scale: Scale = "pp"
    """The scale of the contrast: pp (percentage points), normalized (share of the misses recovered),
    log_odds, drift_absolute / drift_base_normalized (finding 6), balanced (position-balanced probes)."""
    margin: float = 0.05
    """Equivalence margin on that scale (a proportion: 0.05 = 5 pp): "no effect" needs the interval inside ±margin."""
    arms: list[str] = field(default_factory=list)
    """The configurations (row labels, e.g. ``tg-lora``) whose results enter this finding; empty = the finding's default."""
    power: Optional[PowerRule] = None
    """This finding's power calculation (else the plan's ``power``); None = none of its own."""


@dataclass
class AnalysisPlan:
    """A study's pre-registered analysis plan: recorded with its hash and commit before the first
    result (plan/registration.py); the report prints it and flags rules changed afterwards."""

    min_seeds: int = 3
    """An arm with fewer seeds carries no verdict (the finding says which arm and how many it has)."""
    retrieval_floor: float = 0.10
    """A configuration whose constrained Rc@k is below this does not retrieve: reported, not averaged in."""
    sensitivity_ks: list[int] = field(default_factory=lambda: [1, 5, 10, 50])
    """Each finding's verdict is also shown at these k; one that flips says "depends on k"."""
    sensitivity_scales: list[Scale] = field(default_factory=lambda: ["pp", "normalized", "log_odds"])
    """... and on these scales (drift: absolute and base-normalized)."""
    interval: str = "two-level bootstrap: seeds within a configuration, items clustered within seeds"
    """How every interval of a verdict is computed (comparison/stats.py)."""
    findings: dict[int, FindingRule] = field(default_factory=dict)
    """Finding number -> its rule; a finding not listed is reported without a registered verdict."""
    regime: Optional[RegimeRule] = None
    """A pilot's rules (study=pilot): the regime its curves must reach; None = not a pilot. Left out of the
    plan's hash when None, so the plans registered before this field existed keep their hashes."""
    secondary: dict[str, dict[str, str]] = field(default_factory=dict, metadata={"open": True})
    """Endpoint name -> {primary benchmark label: its substitute}, e.g. ``toolbench: {standard: toolbench}``: every
    finding judged again under its own rule on the sweeps with those benchmark columns read in place of the primary's
    (study/readings.py); reported beside the primary verdict, no verdict of the study resting on them."""
    seed_subsets: list[int] = field(default_factory=list)
    """Also judge every finding on the first N seeds of each arm (its N lowest seed numbers), for each N listed."""
    power: Optional[PowerRule] = None
    """The power calculation of every finding without its own (``findings.<n>.power``); None = none."""

    def __post_init__(self) -> None:
        if self.regime is not None:
            self.regime.check()
        if self.min_seeds < 1:
            raise ValueError(f"analysis.min_seeds must be >= 1, got {self.min_seeds}")
        if not 0 <= self.retrieval_floor < 1:
            raise ValueError(f"analysis.retrieval_floor must lie in [0, 1) (a proportion), got {self.retrieval_floor}")
        if not self.sensitivity_ks or any(k < 1 for k in self.sensitivity_ks):
            raise ValueError(f"analysis.sensitivity_ks must be cut-offs >= 1, got {self.sensitivity_ks}")
        if any(n < 1 for n in self.seed_subsets):
            raise ValueError(f"analysis.seed_subsets: seeds per arm must be >= 1, got {self.seed_subsets}")
        for name, subst in self.secondary.items():
            if not subst or not all(isinstance(a, str) and a and isinstance(b, str) and b and a != b for a, b in subst.items()):
                raise ValueError(f"analysis.secondary.{name}: a primary benchmark label -> another benchmark's label, "
                                 f"at least one pair (e.g. {{standard: toolbench}}), got {dict(subst)}")
        if self.power is not None:
            self.power.check("analysis.power")
        for n, rule in self.findings.items():
            if rule.power is not None:
                rule.power.check(f"analysis.findings.{n}.power")
            if rule.k < 1 or not 0 <= rule.margin < 1:
                raise ValueError(f"analysis.findings.{n}: k must be >= 1 and margin in [0, 1), got k={rule.k}, margin={rule.margin}")
            if rule.metric not in ("accuracy", "drift") and not METRICS.parse(f"{rule.metric}@{rule.k}"):
                raise ValueError(f"analysis.findings.{n}.metric={rule.metric!r}: accuracy, drift or a registered retrieval "
                                 f"metric without its @k ({', '.join(METRICS.spellings())}; metrics/registry.py)")
