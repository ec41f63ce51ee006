"""Seed-aware intervals (comparison/seed_stats.py): exact values on hand-made runs, pairing by seed,
and a simulation with a known between-seed variance where the two-level interval covers the
configuration's mean about 95% of the time and the item-only one does not."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t

from toolsense.comparison.seed_stats import seed_contrast, seed_item_interval, seed_mean, seed_normalized_gain_contrast, seed_paired_diff
from toolsense.comparison.stats import cluster_bootstrap, contrast, normalized_gain_contrast


def _items(values, prefix="q"):
    return {f"{prefix}{i}": float(v) for i, v in enumerate(values)}


def test_two_level_variance_of_a_mean_by_hand():
    """3 seeds × 4 items, seed means 0.5, 0.25, 0.75: the between-seed part s²/S = 0.0625 / 3; the
    item part shared by the seeds is their mean pairwise covariance over items, (1/6 + 1/6 + 1/12) / 3
    = 5/36, over 4 items; se² = 1/48 + 5/144 = 1/18, df = se⁴ / ((1/48)² / 2 + (5/144)² / 3) = 4.987.
    The items-only interval of the per-item means (1, 2/3, 1/3, 0) has se² = s²/4 = (5/27)/4 = 5/108 on 3 df:
    half-width t₃ · 0.215 = 0.685 against the two-level t₄.₉₉ · 0.236 = 0.606 (at 90%: 0.506 against 0.475), so on
    4 items the floor is the wider, and is what is given."""
    runs = {0: _items([1, 1, 0, 0]), 1: _items([1, 0, 0, 0]), 2: _items([1, 1, 1, 0])}
    est = seed_item_interval([(1.0, [(("tg", s), v, None) for s, v in runs.items()])])
    se = math.sqrt(1 / 18)
    df = (1 / 18) ** 2 / ((1 / 48) ** 2 / 2 + (5 / 144) ** 2 / 3)
    assert df == pytest.approx(4.987, abs=1e-3)
    assert est["value"] == pytest.approx(0.5) and est["two_level_se"] == pytest.approx(se) and est["two_level_df"] == pytest.approx(df)
    floor = math.sqrt(5 / 108)
    assert est["items_floor"] and est["se"] == pytest.approx(floor) and est["df"] == 3 and "items only" in est["method"]
    assert (est["lo"], est["hi"]) == pytest.approx((0.5 - t.ppf(0.975, 3) * floor, 0.5 + t.ppf(0.975, 3) * floor))
    assert (est["lo90"], est["hi90"]) == pytest.approx((0.5 - t.ppf(0.95, 3) * floor, 0.5 + t.ppf(0.95, 3) * floor))
    assert est["sd"] == pytest.approx(0.25) and est["n_seeds"] == 3 and not est["one_seed"] and est["n_items"] == 4
    wide = seed_item_interval([(1.0, [(("tg", s), {**v, **{f"r{s}": 0.0}}, None) for s, v in runs.items()])])
    assert not wide["items_floor"] and "two-level" in wide["method"] and "two_level_se" not in wide  # the seeds' spread wins
    assert wide["hi"] - wide["lo"] == pytest.approx(2 * t.ppf(0.975, wide["df"]) * wide["se"])
    clipped = seed_mean(runs)  # a mean of 0/1 values: the interval stays in [0, 1]
    assert (clipped["lo"], clipped["hi"]) == (0.0, 1.0)


def test_seeds_that_disagree_item_by_item_get_at_least_the_items_only_interval():
    """Two seeds that each hit 1 of 58 queries, different ones: their means are equal (no between-seed part) and their
    shared item covariance is negative (clipped to 0), so the two-level variance is 0 — before the floor the cell read
    1.7 ± 0.0 [1.7, 1.7]. Now it is the items-only interval of the per-item means (0.5 on 2 queries, 0 on 56):
    se² = s²/58, t with 57 df, [0 (clipped), 4.1] pp, the same as one run holding both hits would get."""
    a, b = _items([i == 0 for i in range(58)]), _items([i == 1 for i in range(58)])
    est = seed_mean({0: a, 1: b})
    means = np.array([0.5, 0.5] + [0.0] * 56)
    se = math.sqrt(np.var(means, ddof=1) / 58)
    assert est["value"] == pytest.approx(1 / 58) and est["two_level_se"] == 0.0
    assert est["items_floor"] and est["se"] == pytest.approx(se) and est["df"] == 57
    assert (est["lo"], est["hi"]) == pytest.approx((0.0, 1 / 58 + t.ppf(0.975, 57) * se))
    assert round(100 * est["hi"], 1) == 4.1 and est["hi"] - est["lo"] > 0.04
    # wider than (and holding) the items-only cluster bootstrap of the same runs, at both levels
    boot = cluster_bootstrap([a, b], 2000, 0)
    assert est["lo"] <= boot["lo"] and est["hi"] >= boot["hi"] - 0.005
    # seeds that agree (both hit q0) read wider, [0, 5.2]: a shared hit is an item effect, which the pooled mean
    # keeps; hits on different queries are independent draws, p(1 − p) / (2 · 58) = se² 0.0120² (the floor: 0.0121)
    agree = seed_mean({0: a, 1: a})
    assert not agree["items_floor"] and round(100 * agree["hi"], 1) == 5.2
    assert est["se"] == pytest.approx(math.sqrt((1 / 58) * (57 / 58) / 116), rel=0.01)
    # a paired difference against an arm that misses everything, paired by seed: the same floor
    none = _items([0] * 58)
    diff = seed_paired_diff({"c": ({0: none, 1: none}, {0: a, 1: b})})
    assert diff["items_floor"] and diff["se"] == pytest.approx(se) and diff["hi"] == pytest.approx(est["hi"])


def test_seeds_that_agree_on_every_item_give_the_point_and_a_writable_df():
    """Two seeds retrieving all of 3 items (a tiny sweep's Rc@10): no variance, so the interval is the point
    and df is None (inf is not JSON: comparison.json refused it and the sweep's table was never written)."""
    from toolsense.utils.io import dump_json

    est = seed_mean({0: _items([1, 1, 1]), 1: _items([1, 1, 1])})
    assert (est["value"], est["lo"], est["hi"], est["se"], est["df"]) == (1.0, 1.0, 1.0, 0.0, None)
    assert '"df": null' in dump_json(est)


def test_one_seed_is_the_item_only_variance_and_is_marked():
    """A configuration of one run: no between-seed part can be estimated; the variance is the item
    variance s²/N of that run (what the item-only bootstrap estimates), and the result says so."""
    est = seed_mean({0: _items([1, 1, 0, 0])})
    assert est["one_seed"] and est["n_seeds"] == 1 and est["sd"] is None and "items only" in est["method"]
    assert est["se"] == pytest.approx(math.sqrt(np.var([1, 1, 0, 0], ddof=1) / 4)) and est["df"] == pytest.approx(3)


def test_arms_with_the_same_seeds_are_paired_by_seed():
    """Two seeds per arm whose runs are shifted by +0.2 in both arms alike: paired by seed, the shift
    cancels (se² = the item part of B − A alone: s²(−0.1, 0.1) / 2 = 0.01, df 1); with B's second run
    another seed, the arms are two populations and each adds s²(seed means) / 2 = 0.01 (df 3; on these 2 items
    the items-only interval, on 1 df, is wider and is given)."""
    a = {0: {"x": 0.2, "y": 0.4}, 1: {"x": 0.4, "y": 0.6}}
    b = {0: {"x": 0.5, "y": 0.9}, 1: {"x": 0.7, "y": 1.1}}
    matched = seed_paired_diff({"tg → tg_3fm": (a, b)})
    assert matched["value"] == pytest.approx(0.4) and matched["se"] == pytest.approx(0.1) and matched["df"] == pytest.approx(1)
    assert matched["seeds"] == {"tg → tg_3fm": 2} and matched["n_pairs"] == 1
    unmatched = seed_paired_diff({"tg → tg_3fm": (a, {0: b[0], 2: b[1]})})
    assert unmatched["value"] == pytest.approx(0.4) and unmatched["two_level_se"] == pytest.approx(math.sqrt(0.03))
    assert unmatched["two_level_df"] == pytest.approx(3) and unmatched["seeds"] == {"tg → tg_3fm:A": 2, "tg → tg_3fm:B": 2}
    # on 2 items the items-only interval (se 0.1, t with 1 df: ± 1.27) is wider than the two-level one (± 0.55)
    assert unmatched["items_floor"] and unmatched["se"] == pytest.approx(0.1) and unmatched["df"] == 1
    one = seed_paired_diff({"p": ({0: a[0]}, {1: b[0]})})  # one seed each, different: both arms one-seed
    assert one["one_seed"] and one["value"] == pytest.approx(0.4)


def test_contrast_and_normalized_gain_agree_with_the_item_only_point_estimates():
    """Same numbers as stats.contrast / normalized_gain_contrast on one configuration of two runs;
    the runs are one unit in both sides (their standard and realistic evaluations come from one run)."""
    rng = np.random.default_rng(3)
    runs = {s: tuple({f"{b}{i}": float(rng.random() < p) for i in range(40)} for p in (0.3, 0.7)) for s in (0, 1) for b in "s"}
    real = {s: tuple({f"r{i}": float(rng.random() < p) for i in range(40)} for p in (0.1, 0.3)) for s in (0, 1)}
    c = seed_contrast({"tg": ({s: v[0] for s, v in runs.items()}, {s: v[1] for s, v in runs.items()})},
                      {"tg": ({s: v[0] for s, v in real.items()}, {s: v[1] for s, v in real.items()})})
    assert c["value"] == pytest.approx(contrast(list(runs.values()), list(real.values()))["value"])
    assert c["seeds"] == {"tg": 2} and c["lo"] < c["value"] < c["hi"]
    g = seed_normalized_gain_contrast({"tg": runs}, {"tg": real})
    old = normalized_gain_contrast({"tg": list(runs.values())}, {"tg": list(real.values())})
    assert g["value"] == pytest.approx(old["value"]) and g["first"]["value"] == pytest.approx(old["first"]["value"])
    assert g["per_group"]["tg"] == pytest.approx(old["per_group"]["tg"]) and g["n_groups"] == 1


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _coverage(tau: float, seeds: int = 4, items: int = 150, datasets: int = 300, mu: float = 0.4, item_sd: float = 0.8):
    """Share of simulated data sets whose 95% interval holds the configuration's true mean recall:
    run s has logit effect a_s ~ N(0, tau²), item i b_i ~ N(0, item_sd²) (items drawn afresh per data
    set: the benchmark is a sample too), hit ~ Bernoulli(sigmoid(mu + a_s + b_i)); the truth is
    E[sigmoid(mu + a + b)] by Gauss–Hermite quadrature. Returns (two-level, item-only) coverage."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    truth = float((w * _sigmoid(mu + math.hypot(tau, item_sd) * x)).sum() / w.sum())
    rng = np.random.default_rng(7)
    hits = {"two-level": 0, "item-only": 0}
    for k in range(datasets):
        a, b = rng.normal(0, tau, seeds), rng.normal(0, item_sd, items)
        y = (rng.random((seeds, items)) < _sigmoid(mu + a[:, None] + b[None])).astype(float)
        runs = {s: _items(y[s]) for s in range(seeds)}
        for name, est in (("two-level", seed_mean(runs)), ("item-only", cluster_bootstrap(list(runs.values()), 200, k))):
            hits[name] += est["lo"] <= truth <= est["hi"]
    return hits["two-level"] / datasets, hits["item-only"] / datasets


def test_simulated_coverage_of_two_level_and_item_only_intervals():
    """A large between-seed SD (logit 0.5, ~11 pp of recall): the two-level interval covers ~95%, the
    item-only one — one run taken for the configuration — far less. With no between-seed variance the
    two-level interval is not needlessly wide: it still covers near 95%, not ~100%."""
    two, item = _coverage(tau=0.5)
    assert 0.90 <= two <= 0.99 and item < 0.75
    two, item = _coverage(tau=0.0)
    assert 0.90 <= two <= 0.99 and 0.90 <= item <= 0.99


def test_retention_of_several_runs_pairs_each_run_with_itself():
    """Stage 2 − Stage 1 of a configuration's runs: one run over items alone (marked); two runs over
    seeds and items, each run's two evaluations paired (its Stage-2 change per item: −0.5 and −0.25)."""
    from toolsense.comparison.cell_stats import retention_estimate

    s1 = _items([1, 1, 1, 1])
    one = retention_estimate([(s1, _items([1, 1, 0, 0]))], "tg-lora", 200, 0)
    assert one["one_seed"] and one["value"] == pytest.approx(-0.5) and one["n_seeds"] == 1
    two = retention_estimate([(s1, _items([1, 1, 0, 0])), (s1, _items([1, 1, 1, 0]))], "tg-lora", 200, 0)
    assert two["value"] == pytest.approx(-0.375) and two["seeds"] == {"tg-lora": 2} and not two["one_seed"]
    # bounded: a difference of 0/1 values
    assert two["sd"] == pytest.approx(0.25 / 2**0.5) and -1.0 <= two["lo"] < -0.375 < two["hi"] <= 1.0


def test_simulated_coverage_of_a_log_odds_contrast_by_the_delta_method():
    """comparison/scales.rate_contrast on the log-odds scale (a smooth transform of two pooled rates, linearized by
    seed_item_interval): two arms of 4 seeds each with a between-seed logit SD of 0.5, scored on the same 150 items;
    its 95% interval holds logit E[B] − logit E[A] about 95% of the time."""
    from toolsense.comparison.scales import rate_contrast

    x, w = np.polynomial.hermite_e.hermegauss(80)
    mean = lambda mu: float((w * _sigmoid(mu + math.hypot(0.5, 0.8) * x)).sum() / w.sum())  # noqa: E731
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    truth = logit(mean(0.6)) - logit(mean(0.0))
    rng = np.random.default_rng(11)
    held, datasets = 0, 300
    for _ in range(datasets):
        b = rng.normal(0, 0.8, 150)
        arms = [{s: _items((rng.random(150) < _sigmoid(mu + rng.normal(0, 0.5) + b)).astype(float)) for s in range(4)}
                for mu in (0.0, 0.6)]
        est = rate_contrast({"c": (arms[0], arms[1])}, "log_odds", True)
        held += est["lo"] <= truth <= est["hi"]
    assert 0.90 <= held / datasets <= 0.99, held / datasets
