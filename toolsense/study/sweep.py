"""The reproduction report: each of the paper's findings, the paper's number, ours with a 95%
interval, and whether the direction holds — built from the ``results.json`` / ``drift.json``
files of a study's sweeps (sweeps.py) and nothing else, so deleting the report and rebuilding it
(``python reproduce.py train=false``) gives the same file.

Verdicts (:func:`verdict`, :func:`near_chance`): **yes** — our estimate has the paper's sign and
its 95% interval excludes zero; **no** — the interval excludes zero on the opposite side;
**inconclusive (leans yes / no)** — the interval holds zero; "near chance" is an equivalence
test against a stated margin; **untestable** — the data cannot answer (a probe ceiling at
chance, an IS on too few constrained hits, drift without per-token rows), with the reason;
**n/a** — the sweep lacks the configurations the finding compares.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from toolsense.comparison.compare import collect, comparison
from toolsense.comparison.runs import item_values, run_dir_of
from toolsense.comparison.seed_stats import seed_contrast, seed_normalized_gain_contrast, seed_paired_diff
from toolsense.comparison.stats import contrast, normalized_gain_contrast, paired_diff


@dataclass(frozen=True)
class Settings:
    """What every finding reads besides the sweeps (StudyConfig fills it)."""

    k: int = 5
    """Cutoff of the recall and IS columns (Rc@k, Rf@k, IS@k)."""
    resamples: int = 1000
    """Bootstrap resamples of every interval."""
    margin: float = 0.10
    """Equivalence margin of "near chance" (finding 4), as a proportion (0.10 = 10 pp)."""
    min_hits: int = 10
    """An IS on fewer constrained hits is flagged and used for no verdict (finding 3)."""
    min_seeds: int = 3
    """No verdict rests on an arm with fewer training seeds: its finding says "not enough seeds" (:func:`seed_gate`)."""
    ceiling_margin: float = 0.10
    """Finding 5 compares two runs only where their MCQ card ceilings differ by at most this (a proportion)."""
    gain_scale: str = "normalized"
    """Finding 1's verdict: on the difference of the normalized gains (the share of Stage 1's misses recovered;
    study=tools' revised rule) or, ``pp``, of the gains in pp; a registered plan's ``findings.1.scale`` sets it."""
    arms: Mapping[int, Sequence[str]] = field(default_factory=dict)
    """Finding -> the configurations (row labels) that enter it, from a plan's ``findings.<n>.arms``; a finding not
    listed takes every row."""
    retrieval_floor: float = 0.0
    """Findings 1 and 2 leave out (and name) a configuration whose constrained standard Rc@k after Stage 2 is below this."""


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

    def __init__(self, name: str, path: Path, k: int, resamples: int, min_hits: int = 10):
        self.name, self.path = name, path
        results = [r for r in collect([path]) if _finished(r)]
        self.comp = comparison(results, [f"Rc@{k}", f"Rf@{k}", f"IS@{k}"], resamples, min_hits=min_hits) if results else None

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


def below_floor(g: Sweep, rows: Sequence[str], floor: float, k: int) -> list[str]:
    """The ``rows`` that do not retrieve: constrained standard Rc@``k`` below ``floor`` (a row with no
    such cell is not judged here); findings and their sensitivity tables report them, not average them in."""
    values = {r: (g.cell(r, f"standard Rc@{k}") or {}).get("value") for r in rows}
    return [r for r, v in values.items() if v is not None and v < floor]


Arms = dict[str, tuple[dict[int, dict], dict[int, dict]]]
"""``"A → B" -> (A's runs, B's runs)``, each ``trainer.seed -> item id -> value``: what seed_stats pairs."""


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


def arm_seeds(arms: Arms) -> dict[str, int]:
    """Row -> its number of seeds in ``arms`` (each row of a pair is an arm)."""
    out: dict[str, int] = {}
    for name, (a, b) in arms.items():
        ra, _, rb = name.partition(" → ")
        out[ra], out[rb] = max(out.get(ra, 0), len(a)), max(out.get(rb, 0), len(b))
    return out


def arms_diff(arms: Arms, resamples: int) -> dict | None:
    """B − A paired per item over ``arms``: with one seed in every arm (the same seed in both), over
    items alone (stats.paired_diff, pooled over the pairs), marked ``one_seed``; otherwise over seeds
    and items, paired by seed where both arms hold the same seeds (seed_stats.seed_paired_diff)."""
    if not arms:
        return None
    if all(len(a) == 1 and set(a) == set(b) for a, b in arms.values()):
        est = paired_diff([(a[s], b[s]) for a, b in arms.values() for s in a], resamples)
        return est and {**est, **ONE_SEED}
    return seed_paired_diff(arms)


ONE_SEED = {"n_seeds": 1, "one_seed": True, "method": "items only: cluster bootstrap (one seed)"}
"""What an estimate over arms of one seed each carries: its interval is over items alone."""


def _single(*arms: Arms) -> bool:
    return all(len(a) == 1 and set(a) == set(b) for x in arms for a, b in x.values())


def arms_contrast(first: Arms, second: Arms, resamples: int) -> dict | None:
    """(B − A over ``first``) − (B − A over ``second``): stats.contrast over items where every arm has
    one seed (marked), else seed_stats.seed_contrast (a run in both sides one unit)."""
    if not first or not second:
        return None
    if _single(first, second):
        est = contrast(*([(a[s], b[s]) for a, b in side.values() for s in a] for side in (first, second)), resamples)
        return est and {**est, **ONE_SEED}
    return seed_contrast(first, second)


def arms_gain(first: Arms, second: Arms, resamples: int) -> dict | None:
    """The normalized gain of ``first`` minus that of ``second`` (each arm pair: (before, after) of the
    same runs; groups the pairs both hold), averaged over groups: stats.normalized_gain_contrast over
    items where every arm has one seed (marked), else seed_stats.seed_normalized_gain_contrast."""
    groups = [g for g in first if g in second]
    if _single(first, second):
        est = normalized_gain_contrast({g: [(a[s], b[s]) for s in a] for g, (a, b) in first.items()},
                                       {g: [(a[s], b[s]) for s in a] for g, (a, b) in second.items()}, resamples)
        return est and {**est, **ONE_SEED}
    return seed_normalized_gain_contrast({g: {s: (first[g][0][s], first[g][1][s]) for s in first[g][0]} for g in groups},
                                         {g: {s: (second[g][0][s], second[g][1][s]) for s in second[g][0]} for g in groups})


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


VERDICT_RULE = ("**yes** — the paper's sign, and the 95% interval excludes zero; **no** — the interval excludes zero on the "
                "opposite side; **inconclusive (leans yes / no)** — the interval holds zero (the point estimate's side named)")
"""The rule of :func:`verdict`, stated in the report's header."""


def verdict(est: dict | None, expect_positive: bool = True) -> str:
    """yes / no / inconclusive (leans …) from an estimate of an effect the paper found positive
    (or negative, ``expect_positive=False``): "no" needs the interval to exclude zero on the
    opposite side — a wrong-signed point estimate whose interval holds zero is inconclusive."""
    if not est or est.get("value") is None:
        return "n/a"
    sign = 1 if expect_positive else -1
    v = est["value"] * sign
    lo, hi = est.get("lo"), est.get("hi")
    if lo is not None and hi is not None:
        lo, hi = sorted((lo * sign, hi * sign))
        if lo > 0:
            return "yes"
        if hi < 0:
            return "no"
    return "inconclusive" if v == 0 else f"inconclusive (leans {'yes' if v > 0 else 'no'})"


EQUIVALENCE_RULE = ("near chance: **yes** when the 90% interval (two one-sided tests at 5%) lies inside chance ± margin, "
                    "**no** when the 95% interval lies wholly outside it, **inconclusive (too few items)** when the 90% "
                    "interval is wider than the band, else inconclusive (leans …)")


def near_chance(est: dict | None, chance: float, margin: float) -> str:
    """An equivalence test of "the score is near chance": yes when the 90% interval (``lo90``,
    ``hi90``; TOST at α = 5%) lies inside ``chance ± margin``; no when the 95% interval lies
    wholly outside the band; "inconclusive (too few items)" when the 90% interval is wider than
    the band itself (no outcome could show equivalence); else inconclusive, leaning by whether
    the point estimate lies inside the band. The paper's 31.4% on 496 4-option items (90%
    interval about [28.0, 34.8]) is near chance 25% ± 10 pp."""
    if not est or est.get("value") is None:
        return "n/a"
    lo90, hi90 = est.get("lo90"), est.get("hi90")
    if lo90 is None or hi90 is None:
        return "inconclusive (no interval)"
    band = (chance - margin, chance + margin)
    if band[0] <= lo90 and hi90 <= band[1]:
        return "yes"
    if (est.get("lo") is not None and est["lo"] > band[1]) or (est.get("hi") is not None and est["hi"] < band[0]):
        return "no"
    if hi90 - lo90 > 2 * margin:
        return "inconclusive (too few items)"
    return f"inconclusive (leans {'yes' if band[0] <= est['value'] <= band[1] else 'no'})"


def conjunction(verdicts: Sequence[str]) -> str:
    """The verdict of a claim that needs every part (finding 7: realistic up *and* standard down): yes when every
    part is yes, no when any is no, else inconclusive, leaning no when any part leans no."""
    if all(v == "yes" for v in verdicts):
        return "yes"
    if "no" in verdicts:
        return "no"
    return f"inconclusive (leans {'no' if any('leans no' in v for v in verdicts) else 'yes'})"


def combine(verdicts: Sequence[str]) -> str:
    """One verdict from several parts of a finding: yes when every part is yes, no when any is
    no, n/a or untestable when every part is; else inconclusive (leaning the way most lean)."""
    vs = [v for v in verdicts if v not in ("n/a", "untestable")]
    if not vs:
        return "untestable" if "untestable" in verdicts else "n/a"
    if all(v == "yes" for v in vs):
        return "yes"
    if "no" in vs:
        return "no"
    if any("too few items" in v for v in vs):
        return "inconclusive (too few items)"
    yes = sum(v in ("yes", "inconclusive (leans yes)") for v in vs)
    return f"inconclusive (leans {'yes' if yes >= len(vs) - yes else 'no'})"
