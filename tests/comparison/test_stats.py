"""The paper's statistics on constructed inputs with hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from toolsense.comparison.stats import (
    cluster_bootstrap,
    cohens_d,
    cohens_d_ci,
    contrast,
    drift_ratio,
    fleiss_kappa,
    mean_sd,
    normalized_gain_contrast,
    paired_diff,
)

# Wikipedia's worked example of Fleiss' kappa: 10 items, 14 raters, 5 categories; P = 0.378, Pe = 0.213
WIKIPEDIA = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_fleiss_kappa_wikipedia_example():
    assert fleiss_kappa(WIKIPEDIA) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_kappa_perfect_and_chance_agreement():
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == 1.0
    assert fleiss_kappa([[3, 0], [3, 0]]) == 1.0  # one category everywhere: Pe = 1, full agreement
    # 2 raters, 2 items, split on each: P = 0, Pe = 0.5 -> kappa = -1
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="item 1 has 2"):
        fleiss_kappa([[3, 0], [1, 1]])


def test_cohens_d_pooled_sd():
    # means 0.8 and 0.4, sample variances 0.01 each -> pooled sd 0.1 -> d = 4
    assert cohens_d([0.9, 0.8, 0.7], [0.5, 0.4, 0.3]) == pytest.approx(4.0)
    # unequal sizes: s1^2 = 1 (n=3, mean 2), s2^2 = 2 (n=2, mean -1): pooled var (2*1 + 1*2)/3 = 4/3
    assert cohens_d([1, 2, 3], [0, -2]) == pytest.approx(3 / math.sqrt(4 / 3))
    with pytest.raises(ValueError, match="both groups non-empty"):
        cohens_d([1.0, 2.0], [])


def test_mean_sd_over_seeds():
    assert mean_sd([0.4, 0.5, 0.6]) == pytest.approx((0.5, 0.1))
    assert mean_sd([0.4]) == (0.4, None)


def test_cluster_bootstrap_resamples_items_not_rows():
    """Two seeds that answer 100 items identically (p = 0.5) carry the information of 100 items,
    not 200: resampling items gives the binomial se sqrt(0.25 / 100) = 0.05 (95% width 0.196),
    resampling the 200 (seed, item) rows as if independent gives 0.05 / sqrt(2) (width 0.139)."""
    items = {f"q{i}": float(i % 2) for i in range(100)}
    est = cluster_bootstrap([items, dict(items)], resamples=4000, seed=0)
    assert est["value"] == pytest.approx(0.5) and est["n_items"] == 100
    assert est["hi"] - est["lo"] == pytest.approx(2 * 1.96 * 0.05, rel=0.1)
    rows = np.array([*items.values(), *items.values()])
    naive = rows[np.random.default_rng(0).integers(0, 200, (4000, 200))].mean(1)
    naive_width = float(np.diff(np.quantile(naive, [0.025, 0.975]))[0])
    assert naive_width == pytest.approx(2 * 1.96 * 0.05 / math.sqrt(2), rel=0.1)
    assert (est["hi"] - est["lo"]) / naive_width == pytest.approx(math.sqrt(2), rel=0.15)  # the naive one is narrower
    assert est["lo90"] > est["lo"] and est["hi90"] < est["hi"]
    # unequal seeds: the pooled mean weights every observation alike (3 of 4 observations are hits)
    assert cluster_bootstrap([{"a": 1, "b": 0}, {"a": 1, "b": 1}])["value"] == pytest.approx(0.75)


def test_cluster_ratio_leaves_out_draws_with_no_constrained_hit():
    """IS pooled over seeds = ΣRf / ΣRc. One constrained hit (item a, also a free hit) among 3
    items: a draw of 3 items misses a with probability (2/3)³ = 0.296; those draws have no ratio
    and are counted, not read as IS 0, so the bound stays at 1; 1 hit < min_hits is flagged."""
    num, den = [{"a": 1, "b": 0, "c": 0}], [{"a": 1, "b": 0, "c": 0}]
    r = cluster_bootstrap(num, 2000, 0, denominators=den)
    assert r["value"] == 1.0 and (r["lo"], r["hi"]) == (1.0, 1.0)
    assert r["undefined"] / 2000 == pytest.approx(8 / 27, abs=0.03)
    assert r["hits"] == 1 and r["few_hits"]
    r = cluster_bootstrap([{"a": 1, "b": 0}, {"a": 0, "b": 0}], 500, 0, denominators=[{"a": 1, "b": 1}, {"a": 1, "b": 1}], min_hits=4)
    assert r["value"] == pytest.approx(0.25) and r["hits"] == 4 and not r["few_hits"]
    with pytest.raises(ValueError, match="same items"):
        cluster_bootstrap([{"a": 1}], denominators=[{"b": 1}])


def test_paired_diff_and_contrast_are_clustered_by_item():
    """B − A per item over the items both answered, pooled over run pairs; an item's differences
    in every pair resample together. Identical runs differ by exactly 0 (no spread); a contrast of
    lifts +1 on every item against 0 is exactly 1."""
    same = {f"q{i}": float(i % 2) for i in range(6)}
    d = paired_diff([(same, same), (same, same)])
    assert (d["value"], d["lo"], d["hi"], d["n_pairs"], d["n_items"]) == (0.0, 0.0, 0.0, 2, 6)
    a, b = {"x": 1, "y": 1, "z": 1, "w": 1, "v": 0}, {"x": 1, "y": 1, "z": 0, "w": 0, "v": 0, "only_b": 1}
    d = paired_diff([(a, b)], 1000, 0)
    assert d["value"] == pytest.approx(-0.4) and d["hi"] == 0.0 and d["n_items"] == 5  # only_b is not paired
    assert paired_diff([({"x": 1}, {"y": 1})]) is None
    lift = contrast([({"s1": 0, "s2": 0}, {"s1": 1, "s2": 1})], [({"r1": 0, "r2": 1}, {"r1": 0, "r2": 1})])
    assert (lift["value"], lift["lo"], lift["hi"], lift["n_items"]) == (1.0, 1.0, 1.0, 4)


def test_normalized_gain_contrast_is_the_share_of_the_headroom_gained():
    """A side that Stage 1 takes to 80% and Stage 2 to 100% gains 20 pp, all of its headroom (1.0);
    a side at 0% that gains 20 pp gains a fifth of it (0.2): in pp the two tie, normalized they
    differ by 0.8. Losses count against the gain; groups (configurations) are averaged, not pooled."""
    std = ({f"s{i}": float(i < 8) for i in range(10)}, {f"s{i}": 1.0 for i in range(10)})
    real = ({f"r{i}": 0.0 for i in range(10)}, {f"r{i}": float(i < 2) for i in range(10)})
    assert contrast([std], [real])["value"] == pytest.approx(0.0)
    est = normalized_gain_contrast({"tg": [std]}, {"tg": [real]}, 1000, 0)
    assert est["value"] == pytest.approx(0.8) and est["first"]["value"] == pytest.approx(1.0)
    assert est["second"]["value"] == pytest.approx(0.2) and est["n_items"] == 20 and est["n_groups"] == 1
    assert est["first"]["lo"] == est["first"]["hi"] == 1.0  # every draw that has headroom recovers all of it
    assert est["lo"] < 0.8 < est["hi"] and est["lo"] > 0
    # one query lost (hit at Stage 1, missed at Stage 2) is subtracted: (2 - 1) / 10 misses = 0.1
    lossy = (real[0] | {"r9": 1.0}, real[1])
    assert normalized_gain_contrast({"tg": [lossy]}, {"tg": [real]})["first"]["value"] == pytest.approx(1 / 9)
    # two groups: the mean of their gains (1.0 and 0.0 on the first side), not the pooled ratio
    flat = ({f"s{i}": 0.0 for i in range(10)}, {f"s{i}": 0.0 for i in range(10)})
    two = normalized_gain_contrast({"a": [std], "b": [flat]}, {"a": [real], "b": [real]})
    assert two["first"]["value"] == pytest.approx(0.5) and two["per_group"] == {"a": (1.0, 0.2), "b": (0.0, 0.2)}
    assert normalized_gain_contrast({"a": [std]}, {"b": [real]}) is None  # no group on both sides


def test_cohens_d_interval_over_units():
    x, y = [0.9, 0.8, 0.7, 0.85], [0.5, 0.4, 0.3, 0.45]
    est = cohens_d_ci(x, y, 1000, 0)
    assert est["d"] == est["value"] == pytest.approx(cohens_d(x, y)) and est["n"] == [4, 4]
    assert est["lo"] < est["d"] and est["lo"] > 0  # the groups do not overlap: every finite draw is positive
    assert est["undefined"] < 1000


def test_drift_ratio():
    assert drift_ratio(0.25, 0.05) == pytest.approx(5.0)
    assert drift_ratio(0.25, 0.0) is None
