"""Coverage of the seed-aware intervals (comparison/seed_stats.py) at the plan's seed counts (3, the registered
``min_seeds``; 5, the extension's), for every estimand a finding reads: a configuration's mean (findings 1-2's
cells), a paired difference of two arms by item and seed (finding 7: App. E − TG), the gain contrast (finding 1:
the Stage-2 lift on standard minus that on realistic, one run's four evaluations) and the IS ratio (finding 3:
ΣRf / ΣRc over seeds and items); and, apart, seeds that disagree item by item (no item effect at a hit rate of 2-3%:
their means tie, the two-level variance is 0, and the interval is held up by its floor, the items-only interval).

The model (logit recall, as tests/comparison/test_seed_stats.py): a run's logit effect a_s ~ N(0, tau²), an item's
b_i ~ N(0, item_sd²) drawn afresh per data set (the benchmark is a sample too), hit ~ Bernoulli(sigmoid(mu + a + b)).
The truth of each estimand is its expectation over the random effects, by Monte Carlo over 400,000 draws of them
(no Bernoulli noise; error ~1e-4, far below the 95% band's width). The default suite runs 150 data sets per case
(±1.8 pp of binomial error around 95%); ``python tests/comparison/test_seed_coverage.py --datasets 1000`` prints the
fuller table that docs/reports/study.md quotes.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Callable

import numpy as np
import pytest

from toolsense.comparison.seed_stats import seed_contrast, seed_mean, seed_paired_diff

TAU, ITEM_SD, ITEMS = 0.5, 0.8, 150
"""A large between-seed SD (logit 0.5: ~11 pp of recall), the item spread and the items of the simulations."""


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _items(values, prefix="q") -> dict[str, float]:
    return {f"{prefix}{i}": float(v) for i, v in enumerate(values)}


def _draws(n: int = 400_000, seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def mean_case(seeds: int, rng: np.random.Generator, truth: bool = False):
    """One configuration's mean recall over its seeds' items."""
    mu = 0.4
    if truth:
        r = _draws()
        return float(_sig(mu + r.normal(0, TAU, 400_000) + r.normal(0, ITEM_SD, 400_000)).mean())
    b = rng.normal(0, ITEM_SD, ITEMS)
    runs = {s: _items(rng.random(ITEMS) < _sig(mu + rng.normal(0, TAU) + b)) for s in range(seeds)}
    return seed_mean(runs)


def paired_case(seeds: int, rng: np.random.Generator, truth: bool = False):
    """B − A recall, two arms holding the same seeds (each run its own draw: a seed label pairs runs, it does not
    make them alike), scored on the same items: paired by item and by seed (finding 7)."""
    mus = (0.0, 0.3)
    if truth:
        r = _draws()
        b = r.normal(0, ITEM_SD, 400_000)
        a_side, b_side = (float(_sig(m + r.normal(0, TAU, 400_000) + b).mean()) for m in mus)
        return b_side - a_side
    b = rng.normal(0, ITEM_SD, ITEMS)
    arms = [{s: _items(rng.random(ITEMS) < _sig(m + rng.normal(0, TAU) + b)) for s in range(seeds)} for m in mus]
    return seed_paired_diff({"c": (arms[0], arms[1])})


GAIN = {"standard": (-0.6, 0.6), "realistic": (-0.3, 0.5)}
"""Stage-1 and Stage-2 logit means per benchmark: the Stage-2 lift is larger on standard (finding 1's contrast)."""


def gain_case(seeds: int, rng: np.random.Generator, truth: bool = False):
    """(Stage 2 − Stage 1 on standard) − (the same on realistic), each run evaluated four times: its Stage-1
    effect u ~ N(0, tau²), its Stage-2 effect u + g (g ~ N(0, (tau/2)²): runs gain unequally), a run × benchmark
    effect c ~ N(0, (tau/2)²) shared by its two stages; each benchmark its own items."""
    if truth:
        r = _draws()
        u, g = r.normal(0, TAU, 400_000), r.normal(0, TAU / 2, 400_000)
        out = 0.0
        for sign, (m1, m2) in zip((1, -1), GAIN.values()):
            c, b = r.normal(0, TAU / 2, 400_000), r.normal(0, ITEM_SD, 400_000)
            out += sign * float((_sig(m2 + u + g + c + b) - _sig(m1 + u + c + b)).mean())
        return out
    u, g = rng.normal(0, TAU, seeds), rng.normal(0, TAU / 2, seeds)
    sides = []
    for name, (m1, m2) in GAIN.items():
        c, b = rng.normal(0, TAU / 2, seeds), rng.normal(0, ITEM_SD, ITEMS)
        s1 = {s: _items(rng.random(ITEMS) < _sig(m1 + u[s] + c[s] + b), name) for s in range(seeds)}
        s2 = {s: _items(rng.random(ITEMS) < _sig(m2 + u[s] + g[s] + c[s] + b), name) for s in range(seeds)}
        sides.append({"tg-lora": (s1, s2)})
    return seed_contrast(*sides)


def is_case(seeds: int, rng: np.random.Generator, truth: bool = False):
    """IS = ΣRf / ΣRc: a constrained hit c ~ Bernoulli(sigmoid(0.8 + a + b)); the free-form answer is right only
    where the constrained one is, with probability sigmoid(0.5 + a' + 0.5 b + e) (a' ~ N(0, tau²) the run's own, e
    ~ N(0, 0.5²) the item's): items easy to retrieve are easier to name, so the ratio is not a product of means."""
    def p_c(a, b):
        return _sig(0.8 + a + b)

    def p_f(a2, b, e):
        return _sig(0.5 + a2 + 0.5 * b + e)

    if truth:
        r = _draws()
        a, a2, b, e = (r.normal(0, s, 400_000) for s in (TAU, TAU, ITEM_SD, 0.5))
        pc = p_c(a, b)
        return float((pc * p_f(a2, b, e)).mean() / pc.mean())
    b, e = rng.normal(0, ITEM_SD, ITEMS), rng.normal(0, 0.5, ITEMS)
    rc, rf = {}, {}
    for s in range(seeds):
        c = rng.random(ITEMS) < p_c(rng.normal(0, TAU), b)
        f = c & (rng.random(ITEMS) < p_f(rng.normal(0, TAU), b, e))
        rc[s], rf[s] = _items(c), _items(f)
    return seed_mean(rf, rc)


CASES: dict[str, Callable] = {"mean": mean_case, "paired difference": paired_case, "gain contrast": gain_case,
                              "IS ratio": is_case}


def coverage(case: str, seeds: int, datasets: int, seed: int = 0) -> tuple[float, float]:
    """(share of ``datasets`` simulated data sets whose 95% interval holds the truth, mean interval width)."""
    fn = CASES[case]
    truth = fn(seeds, None, truth=True)
    rng = np.random.default_rng(1000 * seeds + seed)
    held, widths = 0, []
    for _ in range(datasets):
        est = fn(seeds, rng)
        held += est["lo"] <= truth <= est["hi"]
        widths.append(est["hi"] - est["lo"])
    return held / datasets, float(np.mean(widths))


@pytest.mark.parametrize("tau", [0.1, 0.5])
@pytest.mark.parametrize("seeds", [3, 5])
@pytest.mark.parametrize("case", list(CASES))
def test_intervals_cover_about_95_percent_at_the_plans_seed_counts(case, seeds, tau, monkeypatch):
    """150 data sets a case, a between-seed logit SD as the replication measured (0.1: ~2.5 pp) and a large one (0.5):
    a coverage in [0.89, 0.995] (95% ± ~3.5 binomial SEs, the upper end below the ~100% of an interval needlessly wide)."""
    monkeypatch.setattr(sys.modules[__name__], "TAU", tau)
    held, width = coverage(case, seeds, datasets=150)
    assert 0.89 <= held <= 0.995, f"{case} at {seeds} seeds: coverage {held:.3f} (mean width {width:.3f})"
    assert math.isfinite(width) and width > 0


def disagreeing_coverage(rate: float, seeds: int, items: int = 58, datasets: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Seeds that disagree item by item: every hit an independent Bernoulli(``rate``) draw — no item effect, no seed
    effect — so two runs hit different queries and their means often tie (the 2 × 58 case of issue 46: each seed 1 hit,
    different queries, once read 1.7 ± 0.0 [1.7, 1.7]). Returns (coverage of the truth ``rate`` by the 95% interval of
    seed_mean, share of zero-width intervals)."""
    rng = np.random.default_rng(seed)
    held = zero = 0
    for _ in range(datasets):
        est = seed_mean({s: _items(rng.random(items) < rate) for s in range(seeds)})
        held += est["lo"] <= rate <= est["hi"]
        zero += est["hi"] - est["lo"] < 1e-12
    return held / datasets, zero / datasets


@pytest.mark.parametrize("seeds, rate", [(2, 0.03), (3, 0.02)])
def test_intervals_cover_where_seeds_disagree_item_by_item(seeds, rate):
    """1,000 data sets of 58 queries at a hit rate of 2-3% (1-2 hits a run): the 95% interval covers ≥ 93% (measured
    97.0% at 2 seeds, 96.4% at 3). Before the items-only floor it covered 76.3% and 90.0%: where the seeds' means tied,
    the two-level variance was 0 and the interval the point (23.6% and 9.3% of the data sets; now 3.0% and 3.6%, those
    with no hit at all — (1 − rate)^(58 · seeds) ≈ 3% — which every interval over items reads as [0, 0])."""
    held, zero = disagreeing_coverage(rate, seeds)
    assert 0.93 <= held <= 0.995, f"{seeds} seeds at rate {rate}: coverage {held:.3f}"
    assert zero <= (1 - rate) ** (58 * seeds) + 0.02, f"zero-width intervals in {zero:.3f} of the data sets"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--tau", type=float, default=TAU, help="the between-seed logit SD (0.1: ~2.5 pp of recall)")
    args = ap.parse_args()
    globals()["TAU"] = args.tau
    print(f"between-seed logit SD {args.tau}, {ITEMS} items, item logit SD {ITEM_SD}")
    print(f"| estimand | seeds | coverage of the 95% interval ({args.datasets} data sets) | mean width (pp) |")
    print("|---|---|---|---|")
    for case in CASES:
        for s in args.seeds:
            held, width = coverage(case, s, args.datasets)
            se = math.sqrt(held * (1 - held) / args.datasets)
            print(f"| {case} | {s} | {100 * held:.1f}% ± {100 * se:.1f} | {100 * width:.1f} |", flush=True)


if __name__ == "__main__":
    main()
