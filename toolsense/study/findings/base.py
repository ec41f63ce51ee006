"""The one small interface every finding implements (:class:`FindingSpec`: its number, rule, headline,
sensitivity table, the sweeps it reads, how its registered rule sets the settings and picks the table's
headline cell) and the registry of them by number. Statistics live in ``toolsense/comparison/``: a
finding calls them, never the other way."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from toolsense.reporting.tables import pct
from toolsense.study.sweep import Finding, Settings, Sweep, below_floor, floor_cell

if TYPE_CHECKING:
    from toolsense.plan.config import AnalysisPlan, FindingRule


@dataclass(frozen=True)
class TableInput:
    """What a sensitivity table reads: the plan, the sweeps, every k and scale of the plan, the study's k."""

    plan: "AnalysisPlan"
    grid: Sweep
    app_e: Sweep | None
    ks: Sequence[int]
    scales: Sequence[str]
    k_table: int
    resamples: int

    def arms(self, number: int) -> list[str]:
        """The grid's Stage-2 rows in the plan's arms for finding ``number`` (every row where it lists none)."""
        rule, rows = self.plan.findings.get(number), self.grid.rows()
        return [r for r in rows if r in rule.arms] if rule and rule.arms else rows


@dataclass(frozen=True)
class FindingSpec:
    """One finding behind the registry (module doc)."""

    number: int
    rule: str
    """How the finding is judged, in words (the report's header lists every finding's)."""
    compute: Callable[[dict[str, Sweep], Settings], Finding]
    """The headline: ``compute(sweeps by role, settings)`` -> the Finding (estimate, interval, verdict, reason)."""
    table: Callable[[TableInput], dict[str, Any] | None] | None = None
    """The sensitivity table under a plan (None: the finding has none, or not for these sweeps)."""
    reads: tuple[str, ...] = ("grid",)
    """The sweep roles its estimate rests on (the report's "rests on" column names their runs)."""
    compares: Callable[[dict[str, Sweep], Settings], list[tuple[Sweep, str]]] | None = None
    """The arms it compares, as (sweep, row): one below the retrieval floor makes it untestable (:func:`judged`)."""
    configure: Callable[[Settings, "FindingRule"], Settings] | None = None
    """How its registered rule sets the findings' Settings (e.g. the scale of a verdict)."""
    rule_cell: Callable[["FindingRule"], tuple[Any, str]] = lambda rule: (rule.k, rule.scale)
    """The table cell (k, scale) its registered rule reads: the headline's cell in the table."""
    note: str = ""
    """A sentence for the report's header on how the finding is judged (where the rule does not say it)."""


REGISTRY: dict[int, FindingSpec] = {}
"""Finding number -> its spec, filled as ``findings/__init__.py`` imports the finding modules."""


def register(spec: FindingSpec) -> FindingSpec:
    """Add ``spec`` to the registry (its number once: a second module claiming it is an error)."""
    old = REGISTRY.get(spec.number)
    if old is not None and old.compute.__module__ != spec.compute.__module__:
        raise ValueError(f"finding {spec.number} registered twice: {old.compute.__module__} and {spec.compute.__module__}")
    REGISTRY[spec.number] = spec
    return spec


def configured(settings: Settings, plan: "AnalysisPlan") -> Settings:
    """``settings`` under ``plan``: its ``min_seeds``, ``retrieval_floor`` and arms, then each registered
    finding's own rule (its ``configure``) where the plan has one."""
    rules = getattr(plan, "findings", None) or {}
    s = replace(settings, min_seeds=getattr(plan, "min_seeds", settings.min_seeds),
                retrieval_floor=getattr(plan, "retrieval_floor", settings.retrieval_floor),
                arms={n: tuple(r.arms) for n, r in rules.items() if r.arms})
    for n, spec in sorted(REGISTRY.items()):
        rule = rules.get(n)
        if rule is not None and spec.configure is not None:
            s = spec.configure(s, rule)
    return s


FLOOR_RULE = ("a finding that compares arms is untestable when an arm's constrained standard Rc@k is below the retrieval "
              "floor: that arm does not retrieve, so the comparison tests nothing (the verdict without this rule is shown beside)")


def judged(spec: FindingSpec, sweeps: dict[str, Sweep], s: Settings) -> Finding:
    """``spec``'s finding under the retrieval floor: **untestable** — "<arm> does not retrieve" — where an arm it compares
    has constrained standard Rc@k below ``s.retrieval_floor``; the verdict it would have in ``details["floor_rule"]``."""
    f = spec.compute(sweeps, s)
    if spec.compares is None or not s.retrieval_floor or f.verdict == "n/a":
        return f
    below = [(sw, r) for sw, r in spec.compares(sweeps, s) if below_floor(sw, [r], s.retrieval_floor, s.k)]
    if not below:
        return f
    arms = list(dict.fromkeys(r if sw.name == "grid" else f"{sw.name} {r}" for sw, r in below))
    cells = "; ".join(dict.fromkeys(f"{r} {pct(floor_cell(sw, r, s.k))}" for sw, r in below))
    f.details["floor_rule"] = {"below": arms, "verdict_without": f.verdict, "why_without": f.why}
    one = len(arms) == 1
    f.why = "; ".join(x for x in (f"arm{'' if one else 's'} {', '.join(arms)} {'does' if one else 'do'} not retrieve (standard "
                                  f"Rc@{s.k} {cells}: below the retrieval floor {100 * s.retrieval_floor:.0f}%); without the "
                                  f"floor rule this finding reads {f.verdict}", f.why) if x)
    f.verdict = "untestable"
    return f
