"""The reproduction report: each of the paper's findings, the paper's number, ours with a 95%
interval, and whether the direction holds — built from the ``results.json`` / ``drift.json``
files of a study's sweeps (study.py) and nothing else, so deleting the report and rebuilding it
(``python reproduce.py train=false``) gives the same file.

Verdicts: **yes** — our estimate has the paper's sign and its interval excludes no effect;
**direction only** — the sign holds, the interval includes no effect; **no** — the opposite sign
(or, for "near chance", an interval that excludes chance); **untestable** — the probe ceiling
(card mode: the tool's description in the prompt) is itself at chance, so the model cannot
answer the probes at all and a near-chance probe score says nothing about the virtual token;
**n/a** — the sweep lacks the configurations the finding compares.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import yaml

from toolsense.evaluation.compare import collect, comparison
from toolsense.evaluation.runs import item_values, run_dir_of
from toolsense.evaluation.stats import paired_bootstrap_diff


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


class Sweep:
    """One sweep's comparison (compare.comparison over its results) with the lookups the
    findings need: cells by row and column, Stage-2 rows, their experiment / tuning / scheme,
    and paired per-item differences between rows (seeds paired by ``trainer.seed``)."""

    def __init__(self, name: str, path: Path, k: int, resamples: int):
        self.name, self.path = name, path
        results = [r for r in collect([path]) if _finished(r)]
        self.comp = comparison(results, [f"Rc@{k}", f"Rf@{k}", f"IS@{k}"], resamples) if results else None

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


def _seed(result_path: str) -> int:
    """The trainer seed of the run that wrote ``result_path`` (its config.yaml is an ancestor)."""
    for parent in Path(result_path).parents:
        if (parent / "config.yaml").exists():
            return _run_seed(str(parent))
    return 0


@functools.lru_cache(maxsize=None)
def _run_seed(run: str) -> int:
    """A run's ``trainer.seed``, its config.yaml read once per run (every paired cell asks)."""
    cfg = yaml.safe_load((Path(run) / "config.yaml").read_text(encoding="utf-8")) or {}
    return int((cfg.get("trainer") or {}).get("seed", 0))


def paired(pairs: Sequence[tuple[Sweep, str, Sweep, str]], col: str, metric: str, resamples: int) -> dict | None:
    """mean(B − A) over items answered by both, pooled over the (A, B) row pairs and their seeds
    (runs of one seed paired), with a paired bootstrap interval; None when nothing pairs."""
    xs: list[float] = []
    ys: list[float] = []
    for sa, ra, sb, rb in pairs:
        a_src, b_src = sa.sources(ra, col), sb.sources(rb, col)
        for seed in sorted(set(a_src) & set(b_src)):
            a, b = item_values(a_src[seed], metric), item_values(b_src[seed], metric)
            if a is None or b is None:
                continue
            common = sorted(set(a) & set(b))
            xs += [float(a[i]) for i in common]
            ys += [float(b[i]) for i in common]
    return paired_bootstrap_diff(xs, ys, resamples) if xs else None


def verdict(est: dict | None, expect_positive: bool = True) -> str:
    """yes / direction only / no from an estimate of an effect the paper found positive (or negative)."""
    if not est or est.get("value") is None:
        return "n/a"
    sign = 1 if expect_positive else -1
    v, lo, hi = est["value"] * sign, est.get("lo"), est.get("hi")
    if v <= 0:
        return "no"
    bound = None if lo is None else (lo if sign > 0 else -hi)
    return "yes" if bound is not None and bound > 0 else "direction only"


def pct(est: dict | None, signed: bool = False) -> str:
    """``12.3% [4.5, 20.1]`` (or ``+12.3 pp [...]`` for a difference) from an estimate."""
    if not est or est.get("value") is None:
        return "—"
    s = f"{100 * est['value']:+.1f} pp" if signed else f"{100 * est['value']:.1f}%"
    if est.get("sd") is not None:
        s += f" ± {100 * est['sd']:.1f}"
    if est.get("lo") is not None and est.get("hi") is not None:
        s += f" [{100 * est['lo']:.1f}, {100 * est['hi']:.1f}]"
    return s
