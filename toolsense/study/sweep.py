"""One sweep of a study read for its findings: its comparison (compare.comparison over the runs whose
evaluation finished) with cells by row and column, Stage-2 rows and their seeds; the findings' settings,
their result (:class:`Finding`), the rows below the retrieval floor and the seed gate. The verdict rules
are comparison/verdicts.py; the report rebuilt from the same files is the same file."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from toolsense.comparison.compare import collect, comparison
from toolsense.comparison.runs import item_values, run_dir_of
from toolsense.comparison.verdicts import Arms, arms_diff
from toolsense.metrics.registry import METRICS


def metric_column(bench: str, stem: str, k: int) -> str:
    """A sweep's column of a retrieval metric on a benchmark, as compare.result_columns names it:
    ``metric_column("standard", "Rc", 5)`` → ``standard Rc@5`` (the key from metrics/registry.py)."""
    return f"{bench} {METRICS.key(stem, k)}"


@dataclass(frozen=True)
class Settings:
    """What every finding reads besides the sweeps (StudyConfig fills it)."""

    k: int = 5
    """Cutoff of the recall and IS columns (Rc@k, Rf@k, IS@k)."""
    resamples: int = 1000
    """Bootstrap resamples of every interval."""
    margin: float = 0.10
    """Equivalence margin of "near chance" (the probe finding), as a proportion (0.10 = 10 pp)."""
    min_hits: int = 10
    """An IS on fewer constrained hits is flagged and used for no verdict."""
    min_seeds: int = 3
    """No verdict rests on an arm with fewer training seeds: its finding says "not enough seeds" (:func:`seed_gate`)."""
    ceiling_margin: float = 0.10
    """Two runs' probe scores are compared only where their MCQ card ceilings differ by at most this."""
    gain_scale: str = "normalized"
    """The Stage-2 lift's verdict scale, normalized or ``pp`` (a registered rule's scale sets it)."""
    arms: Mapping[int, Sequence[str]] = field(default_factory=dict)
    """Finding number -> the configurations (row labels) that enter it (a plan's ``findings.<n>.arms``; else every row)."""
    retrieval_floor: float = 0.0
    """Constrained standard Rc@k below which a configuration does not retrieve (findings/base.py: judged)."""


@dataclass
class Finding:
    number: int
    claim: str
    paper: str
    ours: str = "—"
    verdict: str = "n/a"
    why: str = ""
    """The likeliest reason when ours disagrees (or why it cannot be tested)."""
    details: dict[str, Any] = field(default_factory=dict)
    rests_on: str = ""
    """The sweeps (and their finished runs) the estimate and verdict are computed from."""


class Sweep:
    """One sweep's comparison (compare.comparison over its results) with the lookups the
    findings need: cells by row and column, Stage-2 rows, their experiment / tuning / scheme,
    and paired per-item differences between rows (seeds paired by ``trainer.seed``)."""

    def __init__(self, name: str, path: Path, k: int, resamples: int, min_hits: int = 10, results: list | None = None):
        self.name, self.path, self.reading = name, path, (k, resamples, min_hits)
        self.results = [r for r in collect([path]) if _finished(r)] if results is None else results
        self.comp = comparison(self.results, [METRICS.key(m, k) for m in ("Rc", "Rf", "IS")], resamples,
                               min_hits=min_hits) if self.results else None

    def with_benchmarks(self, subst: Mapping[str, str]) -> "Sweep | None":
        """This sweep with each primary benchmark's columns read from its substitute (``{"standard": "toolbench"}``:
        ``standard Rc@5`` is toolbench's cell, its results.json and per-item samples too), the primary's own dropped but
        for the retrieval floor (:func:`floor_cell`); None where the runs scored no substitute (an endpoint "not scored")."""
        comp = self.comp or {}
        if not all(any(c.startswith(f"{b} ") for c in comp.get("columns", [])) for b in subst.values()):
            return None

        def col(c: str) -> str | None:
            new = next((f"{a} {c[len(b) + 1:]}" for a, b in subst.items() if c.startswith(f"{b} ")), None)
            return new or (None if any(c.startswith(f"{a} ") for a in subst) else c)

        view = Sweep.__new__(Sweep)
        view.name, view.path, view.reading, view.results = self.name, self.path, self.reading, getattr(self, "results", [])
        view.primary = getattr(self, "primary", self)
        view.comp = {**comp, "columns": [n for c in comp["columns"] if (n := col(c))],
                     "cells": {r: {n: v for c, v in cells.items() if (n := col(c))} for r, cells in comp["cells"].items()},
                     "sources": {f"{r} | {n}": v for key, v in comp.get("sources", {}).items()
                                 for r, _, c in [key.partition(" | ")] if (n := col(c))}}
        return view

    def first_seeds(self, n: int) -> "Sweep":
        """This sweep rebuilt from each configuration's runs of its ``n`` lowest seeds (a finding at a seed subset)."""
        comp, runs = self.comp or {}, {}
        for key, paths in comp.get("sources", {}).items():
            row = key.partition(" | ")[0]
            for p in [] if row in comp["baselines"] else [paths] if isinstance(paths, str) else paths:
                if (run := _run_of(p)) is not None:
                    runs.setdefault(row.partition(":")[0], {})[run] = _run_seed(run)
        keep = {r for by in runs.values() for r in sorted(by, key=lambda r: (by[r], r))[:n]}
        results = [r for r in self.results if (run := _run_of(r["_path"])) is None or run in keep]
        return Sweep(self.name, self.path, *self.reading, results=results)

    def cell(self, row: str, col: str) -> dict | None:
        return ((self.comp or {}).get("cells", {}).get(row) or {}).get(col)

    def rows(self, experiment: str | None = None, tuning: str | None = None, scheme: str | None = None) -> list[str]:
        """Stage-2 training rows (no baselines), filtered by experiment / tuning / index scheme."""
        out = []
        for row in (self.comp or {}).get("rows", []):
            if row in self.comp["baselines"] or ":" in row:
                continue
            exp, _, tun = row.partition(" ")[0].rpartition("-")
            if (experiment in (None, exp)) and (tuning in (None, tun)) and (scheme in (None, self.comp["schemes"].get(row))):
                out.append(row)
        return out

    def baseline(self, kind: str) -> str | None:
        return next((b for b in (self.comp or {}).get("baselines", []) if kind in b), None)

    def sources(self, row: str, col: str) -> dict[int, str]:
        """``trainer.seed -> results.json`` of a cell."""
        paths = ((self.comp or {}).get("sources") or {}).get(f"{row} | {col}") or []
        return {_seed(p): p for p in ([paths] if isinstance(paths, str) else paths)}


def _finished(result: dict) -> bool:
    """A result of a run counts once the run's Stage-2 evaluation has finished (its combined
    ``eval/results.json`` exists): a run still training or evaluating, or killed midway, is left
    out whole rather than shown with half its columns. Untrained evaluations and baselines count."""
    run = run_dir_of(result)
    return not run or (Path(run) / "eval" / "results.json").exists()


def _run_of(result_path: str) -> str | None:
    """The run that wrote ``result_path``: its ancestor holding config.yaml (None: no run, an untrained evaluation)."""
    return next((str(parent) for parent in Path(result_path).parents if (parent / "config.yaml").exists()), None)


def _seed(result_path: str) -> int:
    """The trainer seed of the run that wrote ``result_path`` (its config.yaml is an ancestor)."""
    run = _run_of(result_path)
    return _run_seed(run) if run else 0


@functools.lru_cache(maxsize=None)
def _run_seed(run: str) -> int:
    """A run's ``trainer.seed``, its config.yaml read once per run (every paired cell asks)."""
    cfg = yaml.safe_load((Path(run) / "config.yaml").read_text(encoding="utf-8")) or {}
    return int((cfg.get("trainer") or {}).get("seed", 0))


def floor_cell(g: Sweep, row: str, k: int) -> dict | None:
    """A row's constrained standard Rc@``k``, the retrieval floor's reading: the primary benchmark's also in a view that
    substitutes it (whether an arm retrieves is the arm's, not the endpoint's)."""
    return getattr(g, "primary", g).cell(row, metric_column("standard", "Rc", k))


def scored_samples(g: Sweep | None, bench: str, k: int) -> Path | None:
    """The samples.jsonl of the first Stage-2 row's first run scored on ``bench`` (every run scores the same items), or None."""
    for row in g.rows() if g is not None else []:
        paths = getattr(g, "primary", g).sources(row, metric_column(bench, "Rc", k))
        if paths:
            return Path(paths[min(paths)]).with_name("samples.jsonl")
    return None


def below_floor(g: Sweep, rows: Sequence[str], floor: float, k: int) -> list[str]:
    """The ``rows`` that do not retrieve: constrained standard Rc@``k`` below ``floor`` (a row with no
    such cell is not judged here); findings and their sensitivity tables report them, not average them in."""
    values = {r: (floor_cell(g, r, k) or {}).get("value") for r in rows}
    return [r for r, v in values.items() if v is not None and v < floor]


def seed_arms(pairs: Sequence[tuple[Sweep, str, Sweep, str]], col: str, metric: str, same_runs: bool = False) -> Arms:
    """Every (A, B) row pair's runs by seed (runs without per-item values left out). ``same_runs``:
    A and B are two evaluations of the same runs (Stage 1 and Stage 2) or runs matched by seed (two sweeps
    of one seed grid), so only seeds both hold pair."""
    out: Arms = {}
    for sa, ra, sb, rb in pairs:
        a, b = ({s: v for s, p in sw.sources(r, col).items() if (v := item_values(p, metric)) is not None}
                for sw, r in ((sa, ra), (sb, rb)))
        if same_runs:
            a, b = ({s: v for s, v in x.items() if s in a and s in b} for x in (a, b))
        if a and b:
            out[f"{ra} → {rb}"] = (a, b)
    return out


def paired(pairs: Sequence[tuple[Sweep, str, Sweep, str]], col: str, metric: str, resamples: int) -> dict | None:
    """mean(B − A) over items answered by both, over the (A, B) row pairs and their seeds
    (:func:`arms_diff`); None when nothing pairs."""
    return arms_diff(seed_arms(pairs, col, metric), resamples)


def seed_gate(f: "Finding", arms: Mapping[str, int], min_seeds: int) -> "Finding":
    """No verdict on an arm of fewer than ``min_seeds`` seeds: a yes / no / inconclusive resting on
    one becomes "not enough seeds (arm X has n, …)", the numbers kept and the verdict they would
    give in ``details["verdict_at_these_seeds"]``; n/a and untestable stand."""
    short = sorted((n, a) for a, n in arms.items() if n < min_seeds)
    f.details["seeds"] = dict(arms)
    if not short or f.verdict in ("n/a", "untestable"):
        return f
    f.details["verdict_at_these_seeds"] = f.verdict
    f.verdict = "not enough seeds (" + ", ".join(f"arm {a} has {n}" for n, a in short) + ")"
    f.why = "; ".join(x for x in (f"fewer than {min_seeds} seeds (`min_seeds`) in an arm: at these seeds it would read "
                                  f"{f.details['verdict_at_these_seeds']}", f.why) if x)
    return f


