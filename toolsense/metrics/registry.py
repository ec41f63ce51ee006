"""The metric registry: one registration (:class:`Metric`) owns every spelling of a retrieval metric.

A metric is computed per item for each decoding mode — ``c`` constrained, ``f`` free-form — and
cut-off k, aggregated over items, and shown in tables. One registration gives it

- ``name``: the registry name and its per-item key in samples.jsonl, ``{mode}_{name}@{k}``
  (``c_hit@5``; ``c_rprec`` without a cut-off);
- ``key``: its results.json key, a template over ``{mode}`` and ``{k}`` (``R{mode}@{k}`` → ``Rc@5``):
  the name compare.py's ``metrics``, comparison.json's columns and the tracker's ``eval/`` keys use;
- ``per_item``: ``(ranking, gold, k) -> float`` of one item under one mode (ranking.py);
- ``aggregation``: ``mean`` over items with a percentile bootstrap interval (intervals.mean_ci; in a
  comparison pooled over seeds, comparison/seed_stats.py, and tested per item, comparison/significance.py),
  or ``ratio``: the free-form mean of the metric ``of`` over its constrained mean (IS@k) with
  intervals.is_ci's interval (comparison/cell_stats.pooled_is over seeds); a ratio has no per-item
  value and no paired test;
- ``column``: its header in table.md and report.html (default: the key), ``scale`` (percent, x100
  with one digit; ratio, two digits) and ``table`` (shown there or not).

Evaluation (aggregate.py), table.md (reporting/tables.py), report.html (reporting/html_report.py), the
comparison (comparison/compare.py, runs.py, cell_stats.py, significance.py) and its page
(reporting/compare_report.py) read these registrations, so renaming a metric renames it everywhere
at once; a key once written to results files stays readable through ``aliases``. A requested key
no registration spells is an error naming the registered spellings (:meth:`MetricRegistry.check_keys`),
never a silently empty column. Adding a metric: docs/evaluation.md, "Adding a metric".
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Literal, Mapping, Optional, Sequence

from toolsense.metrics.ranking import Ranking, complete_at, hit_at, ndcg_at, r_precision, recall_at
from toolsense.utils.errors import ConfigError
from toolsense.utils.registry import Registry

Mode = Literal["c", "f"]
MODES: tuple[Mode, ...] = ("c", "f")
"""Decoding modes, in table order: constrained (trie), free-form."""

PerItem = Callable[[Ranking, Sequence[str], Optional[int]], float]


@dataclass(frozen=True)
class Metric:
    """One retrieval metric: its names, how one item scores and how items aggregate (module docstring)."""

    name: str
    """Registry name; the per-item key in samples.jsonl is ``{mode}_{name}@{k}`` (``{mode}_{name}`` without a cut-off)."""
    key: str
    """results.json key: a template over ``{mode}`` (every mean metric has it) and ``{k}`` (iff ``cutoff``)."""
    per_item: Optional[PerItem] = None
    """``(ranking, gold, k) -> float`` of one item (k None without a cut-off); None for a ratio."""
    aggregation: Literal["mean", "ratio"] = "mean"
    """``mean`` over items (bootstrap interval), or ``ratio``: free-form mean of ``of`` / its constrained mean."""
    of: Optional[str] = None
    """A ratio's metric (its free-form over its constrained mean: IS@k = Rf@k / Rc@k of ``hit``)."""
    column: Optional[str] = None
    """Header in table.md and report.html, a template like ``key``; None = the key."""
    cutoff: bool = True
    """Computed at each of ``metrics.ks`` (False: one value per item, e.g. R-precision)."""
    modes: tuple[Mode, ...] = MODES
    """The decoding modes it is computed for (a mean metric)."""
    scale: Literal["percent", "ratio"] = "percent"
    """percent: a proportion shown x100 with one digit; ratio: shown as is with two digits (IS)."""
    table: bool = True
    """Shown as columns of table.md and report.html (every metric is in results.json)."""
    optional: bool = False
    """Samples written before it existed lack it: aggregated only where every item has it (else an error)."""
    aliases: tuple[str, ...] = ()
    """Older results.json keys (templates like ``key``) still read as this metric."""
    about: str = ""
    """One line: what it measures (docs, error messages)."""
    saturates: bool = False
    """Constrained, it reads 1 for every item whose gold tools the system knows once its cut-off (k; R-precision: the
    item's number of gold tools) reaches the number of tools the system ranks: such a value is flagged ``trivial``
    (metrics/aggregate.py), not read as a score."""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"metric name {self.name!r}: lower-case letters, digits and '_' (it names samples.jsonl keys)")
        if (self.aggregation == "mean") != (self.per_item is not None) or (self.aggregation == "ratio") != bool(self.of):
            raise ValueError(f"metric {self.name!r}: a mean needs per_item, a ratio needs `of` (and no per_item)")
        if not self.modes or set(self.modes) - set(MODES):
            raise ValueError(f"metric {self.name!r}: modes must be a non-empty subset of {MODES}, got {self.modes}")
        for t in (self.key, self.header_template, *self.aliases):
            if ("{k}" in t) != self.cutoff or ("{mode}" in t) != (self.aggregation == "mean"):
                raise ValueError(f"metric {self.name!r}: {t!r} must hold {{k}} iff cutoff={self.cutoff} and {{mode}} "
                                 f"iff it is a mean (aggregation={self.aggregation!r})")

    @property
    def header_template(self) -> str:
        return self.column or self.key

    def series(self, ks: Sequence[int], modes: Sequence[Mode] = MODES) -> list[tuple[Optional[Mode], Optional[int]]]:
        """``(mode, k)`` of every value it has at ``ks`` under ``modes``, mode outer (table order); a
        ratio has mode None and needs both modes; without a cut-off k is None."""
        cuts: list[Optional[int]] = list(ks) if self.cutoff else [None]
        if self.aggregation == "ratio":
            return [(None, k) for k in cuts] if set(MODES) <= set(modes) else []
        return [(m, k) for m in MODES if m in modes and m in self.modes for k in cuts]

    def result_key(self, mode: Optional[Mode], k: Optional[int]) -> str:
        return self.key.format(mode=mode or "", k=k)

    def header(self, mode: Optional[Mode], k: Optional[int]) -> str:
        return self.header_template.format(mode=mode or "", k=k)

    def item_key(self, mode: Mode, k: Optional[int], prefix: Optional[str] = None) -> str:
        """The samples.jsonl key of one item's value (``c_hit@5``); ``prefix`` replaces ``{mode}_``."""
        head = f"{mode}_" if prefix is None else prefix
        return f"{head}{self.name}" + ("" if k is None else f"@{k}")


@functools.lru_cache(maxsize=None)
def _pattern(template: str) -> re.Pattern:
    """A key template as a regular expression with groups ``mode`` and ``k``."""
    parts = re.split(r"(\{mode\}|\{k\})", template)
    groups = {"{mode}": "(?P<mode>[cf])", "{k}": "(?P<k>[0-9]+)"}
    return re.compile("".join(groups.get(p, re.escape(p)) for p in parts) + r"\Z")


def spell(template: str) -> str:
    """``R{mode}@{k}`` → ``R{c,f}@k``: how a key template reads in an error message or a page."""
    return template.replace("{mode}", "{c,f}").replace("{k}", "k")


Parsed = tuple[Metric, Optional[Mode], Optional[int]]


class MetricRegistry(Registry[Metric]):
    """The registered metrics in registration order (the order of table columns), and the
    parsing of a results.json key back to ``(metric, mode, k)``."""

    def add(self, metric: Metric) -> Metric:
        """Register ``metric``; its key, aliases and item name must not be read as another metric's."""
        if metric.aggregation == "ratio" and metric.of not in self:
            raise ValueError(f"metric {metric.name!r}: `of` names {metric.of!r}, not a registered metric ({self.names()})")
        for t in (metric.key, *metric.aliases):
            probe = t.format(mode="c", k=7)
            if (hit := self.parse(probe)) is not None:
                raise ValueError(f"metric {metric.name!r}: key {t!r} reads as {hit[0].name!r}'s {spell(hit[0].key)}")
            for other in self:
                if any(_pattern(t).match(o.format(mode="c", k=7)) for o in (other.key, *other.aliases)):
                    raise ValueError(f"metric {metric.name!r}: key {t!r} would read {other.name!r}'s {spell(other.key)}")
        return self.register(metric.name)(metric)

    def remove(self, name: str) -> Metric:
        """Unregister ``name`` (a test's metric); refused while a ratio reads it."""
        if users := [m.name for m in self if m.of == name]:
            raise ValueError(f"metric {name!r} is the base of {users}; remove those first")
        self.get(name)
        return self._items.pop(name)

    def __iter__(self) -> Iterator[Metric]:
        return iter(list(self._items.values()))

    def parse(self, key: str) -> Optional[Parsed]:
        """``(metric, mode, k)`` a results.json key (or an alias of one) names; None when none does
        (nor for a mode the metric is not computed for)."""
        for m in self:
            for t in (m.key, *m.aliases):
                if (match := _pattern(t).match(key)) and match.groupdict().get("mode", m.modes[0]) in m.modes:
                    got = match.groupdict()
                    return m, got.get("mode"), int(got["k"]) if "k" in got else None
        return None

    def spellings(self) -> list[str]:
        return [spell(m.key) for m in self]

    def check_keys(self, keys: Iterable[str], field: str) -> list[str]:
        """``keys`` when every one is a registered metric's results.json key, else a ValueError naming
        ``field``, the key and the registered spellings (a typo never becomes an empty column)."""
        keys = list(keys)
        for key in keys:
            if self.parse(key) is None:
                raise ConfigError(f"{field}: {key!r} is no registered metric; registered: {', '.join(self.spellings())} "
                                  f"(k = a cut-off, e.g. Rc@5; docs/evaluation.md, 'Adding a metric')")
        return keys

    def _stem(self, stem: str, k: Optional[int]) -> Parsed:
        key = stem if k is None else f"{stem}@{k}"
        parsed = self.parse(self.check_keys([key], "metric key")[0])
        assert parsed is not None
        return parsed

    def key(self, stem: str, k: Optional[int] = None) -> str:
        """The results.json key of ``stem`` at cut-off ``k``: ``key("Rc", 5)`` → ``Rc@5``, ``key("IS", 50)``,
        ``key("Rprec_c")``. ``stem`` is a key without its ``@k`` (as ``analysis.findings.<n>.metric``); an
        alias's stem gives the current spelling; an unregistered one is a ValueError naming the registered ones.
        Code outside this room derives every key here, never spells one (tests/test_metric_literals.py)."""
        m, mode, k = self._stem(stem, k)
        return m.result_key(mode, k)

    def item_key(self, stem: str, k: Optional[int] = None, prefix: Optional[str] = None) -> str:
        """The samples.jsonl key of one item's value of :meth:`key` ``(stem, k)``: ``item_key("Rc", 5)`` →
        ``c_hit@5`` (``prefix`` replaces ``{mode}_``: Metric.item_key); a ratio (IS) has none: ValueError."""
        m, mode, k = self._stem(stem, k)
        if m.per_item is None:
            raise ValueError(f"{m.result_key(mode, k)!r} is a ratio ({m.name!r}): it has no per-item value")
        return m.item_key(mode or m.modes[0], k, prefix)

    def find(self, metrics: Mapping[str, dict], key: str) -> Optional[dict]:
        """The estimate of ``key`` in a results.json ``metrics`` dict, under its current spelling or,
        in a file written before a rename, under an alias."""
        if key in metrics or (parsed := self.parse(key)) is None:
            return metrics.get(key)
        m, mode, k = parsed
        return next((metrics[a] for t in m.aliases if (a := t.format(mode=mode or "", k=k)) in metrics), None)

    def scale_of(self, key: str) -> str:
        """``percent`` or ``ratio`` of a results key; percent for what no metric spells (probes)."""
        parsed = self.parse(key)
        return parsed[0].scale if parsed else "percent"

    def is_ratio(self, key: Optional[str]) -> bool:
        parsed = self.parse(key) if key else None
        return bool(parsed and parsed[0].aggregation == "ratio")

    def table_columns(self, ks: Sequence[int]) -> list[tuple[str, str, Metric]]:
        """``(header, results key, metric)`` of every column table.md and report.html show, in order."""
        return [(m.header(mode, k), m.result_key(mode, k), m) for m in self if m.table for mode, k in m.series(ks)]

    def ks_of(self, keys: Iterable[str]) -> list[int]:
        """The cut-offs the results keys ``keys`` hold, sorted."""
        return sorted({p[2] for key in keys if (p := self.parse(key)) is not None and p[2] is not None})


METRICS = MetricRegistry("metric")
"""Every retrieval metric, in table order."""

register = METRICS.add

register(Metric("hit", "R{mode}@{k}", hit_at, saturates=True, about="a gold tool in the top k (Rc@k constrained, Rf@k free-form)"))
register(Metric("is", "IS@{k}", aggregation="ratio", of="hit", scale="ratio",
                about="Internalization Score Rf@k / Rc@k (Wilson interval where every free hit is a constrained hit)"))
register(Metric("recall", "recall_{mode}@{k}", recall_at, table=False, saturates=True, about="share of the gold tools in the top k"))
register(Metric("ndcg", "ndcg_{mode}@{k}", ndcg_at, table=False, about="NDCG@k, binary gains, ideal over all gold tools"))
register(Metric("comp", "COMP{mode}@{k}", complete_at, optional=True, saturates=True, about="every gold tool in the top k"))
register(Metric("rprec", "Rprec_{mode}", lambda ranking, gold, _k: r_precision(ranking, gold), column="Rprec {mode}",
                cutoff=False, optional=True, saturates=True, about="R-precision: share of the top |gold| that is gold"))
