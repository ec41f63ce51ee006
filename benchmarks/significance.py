"""The comparison table's significance tests: scipy's paired permutation test against our sign flips.

    python benchmarks/significance.py [--tests 60] [--items 243] [--repeats 3]
    python benchmarks/significance.py --smoke     # 4 tests of 40 items: seconds

A table of ``--tests`` paired tests of graded per-item values (recall-like, in [0, 1], as a row
pooling seeds gives) on ``--items`` items, at the resamples Holm asks for at that table size
(``monte_carlo_resamples``: 200 x tests). Both sides run the same tests, interleaved, ``--repeats``
times each; prints min / median seconds of each side, the ratio of the minima (medians beside),
and the largest p-value difference between the sides against its Monte Carlo error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import interleaved, line, parse_args, stats  # noqa: E402  (benchmarks/timing.py, beside this script)

SMOKE = {"tests": 4, "items": 40, "repeats": 1}
"""``--smoke``: 4 tests of 40 items (1,000 resamples each): seconds."""


def scipy_p(d: np.ndarray, resamples: int) -> float:
    from scipy.stats import permutation_test

    res = permutation_test((d, np.zeros_like(d)), lambda a, b, axis: np.mean(a - b, axis=axis), permutation_type="samples",
                           vectorized=True, n_resamples=resamples, alternative="two-sided", random_state=0)
    return float(min(1.0, res.pvalue))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=60, help="paired tests in the table")
    ap.add_argument("--items", type=int, default=243, help="items per test (the released RRB part: 243)")
    ap.add_argument("--repeats", type=int, default=3)
    args = parse_args(ap, SMOKE, argv)
    from toolsense.comparison.significance import monte_carlo_resamples, sign_flip_p

    rng = np.random.default_rng(0)
    base = rng.uniform(0.0, 1.0, (args.tests, args.items))
    diffs = [np.clip(b + rng.normal(0.02 * (i % 5), 0.2, args.items), 0, 1) - b for i, b in enumerate(base)]
    r = monte_carlo_resamples(args.tests)
    print(f"{args.tests} tests x {args.items} items, {r} resamples each (200 x tests, floor 1,000)")
    out: dict[str, list[float]] = {}
    times = interleaved({"scipy permutation_test": lambda: out.__setitem__("scipy", [scipy_p(d, r) for d in diffs]),
                         "ours (sign_flip_p)": lambda: out.__setitem__("ours", [sign_flip_p(d, r) for d in diffs])},
                        args.repeats, desc="significance")
    for name, ts in times.items():
        print(line(name, ts))
    s, o = stats(times["scipy permutation_test"]), stats(times["ours (sign_flip_p)"])
    print(f"speed-up ours/scipy = {s['min'] / o['min']:.1f}x on the minima, {s['median'] / o['median']:.1f}x on the medians")
    gap = max(abs(a - b) for a, b in zip(out["scipy"], out["ours"]))
    # ours: P(|T| >= |t|) drawn, variance p(1-p)/R; scipy: 2 x the smaller one-sided share, variance 4 (p/2)(1-p/2)/R
    err = max(4 * ((p * (1 - p) + 4 * (p / 2) * (1 - p / 2)) / r) ** 0.5 for p in out["scipy"])
    print(f"largest |p ours - p scipy| = {gap:.5f} (Monte Carlo bound {err:.5f}: {'within' if gap <= err else 'OUTSIDE'})")


if __name__ == "__main__":
    main()
