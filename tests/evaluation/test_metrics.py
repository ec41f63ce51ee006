import math

import pytest

import numpy as np

from toolsense.evaluation.metrics import (Estimate, aggregate, bootstrap_indices, hit_at, internalization_score, is_ci,
                                          is_delta_variance, item_metrics, mean_ci, ndcg_at, recall_at)

Z = 1.959964


def test_known_ranking_gives_known_hits_recall_ndcg():
    ranking = ["x", None, "g1", "y", "g2"]
    gold = ["g1", "g2", "g3"]
    assert hit_at(ranking, gold, 1) == 0.0
    assert hit_at(ranking, gold, 3) == 1.0
    assert recall_at(ranking, gold, 3) == pytest.approx(1 / 3)
    assert recall_at(ranking, gold, 5) == pytest.approx(2 / 3)
    # DCG@5 = 1/log2(4) + 1/log2(6); the ideal counts all 3 gold tools, not just the 2 found
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranking, gold, 5) == pytest.approx((1 / 2 + 1 / math.log2(6)) / ideal)
    assert ndcg_at(["g1"], ["g1"], 1) == 1.0
    # a tool repeated in the ranking earns no second gain
    assert ndcg_at(["g1", "g1"], ["g1", "g2"], 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_is_degenerate_cases():
    assert internalization_score(0.0, 0.0) == 0.0
    assert internalization_score(0.3, 0.0) == 0.0
    assert internalization_score(0.0, 0.5) == 0.0
    assert internalization_score(0.5, 0.5) == 1.0
    assert internalization_score(0.2, 0.8) == pytest.approx(0.25)
    idx = bootstrap_indices(4, 50, 0)
    assert is_ci([1, 0, 1, 0], [0, 0, 0, 0], idx) == Estimate(0.0, 0.0, 0.0)  # Rc = 0
    assert is_ci([1, 1, 0, 0], [1, 1, 0, 0], np.array([[0, 1, 2, 3]] * 3)) == Estimate(1.0, 1.0, 1.0)  # no spread


def test_is_delta_method_uses_the_paired_bootstrap_covariance():
    """Hits f = [1,0,0,1], c = [1,1,0,1] (Rf = 1/2, Rc = 3/4, IS = 2/3) over four hand-picked
    resamples: means of f (1/2, 1/2, 1/2, 1), of c (3/4, 1, 1/2, 1). Sample moments: Var(Rf) = 1/16,
    Var(Rc) = 11/192, Cov = 1/32, so Var(IS) = (1/16)/(9/16) + (1/4)(11/192)/(81/256)
    − 2(1/2)(1/32)/(27/64) = 27/243 + 11/243 − 18/243 = 20/243 (38/243 without the covariance).
    The upper end, 1.229, stays above 1 (no clipping)."""
    f, c = [1, 0, 0, 1], [1, 1, 0, 1]
    idx = np.array([[0, 1, 2, 3], [0, 0, 1, 1], [2, 2, 3, 3], [0, 3, 0, 3]])
    assert is_delta_variance(0.5, 0.75, 1 / 16, 11 / 192, 1 / 32) == pytest.approx(20 / 243)
    est = is_ci(f, c, idx)
    se = math.sqrt(20 / 243)
    assert est.value == pytest.approx(2 / 3)
    assert est.lo == pytest.approx(2 / 3 - Z * se) and est.hi == pytest.approx(2 / 3 + Z * se)
    assert est.hi == pytest.approx(1.228956, abs=1e-6)


def test_is_interval_narrows_when_free_and_constrained_hits_move_together():
    """n = 500, Rc = 0.6 and the free-form hits a subset of the constrained ones (Rf = 0.3):
    Cov(Rf, Rc) = (0.3 − 0.18)/500 > 0. Analytically Var(IS) = 0.0015 without the covariance
    and 0.000833 with it: the interval is sqrt(1.8) ≈ 1.34x narrower."""
    c = np.r_[np.ones(300), np.zeros(200)]
    f = np.r_[np.ones(150), np.zeros(350)]
    idx = bootstrap_indices(500, 2000, 0)
    est = is_ci(f, c, idx)
    mf, mc = f[idx].mean(1), c[idx].mean(1)
    no_cov = math.sqrt(is_delta_variance(0.3, 0.6, mf.var(ddof=1), mc.var(ddof=1), 0.0))
    width = (est.hi - est.lo) / (2 * Z)
    assert est.value == pytest.approx(0.5) and est.lo < 0.5 < est.hi
    assert no_cov / width == pytest.approx(math.sqrt(1.8), rel=0.05)
    assert width == pytest.approx(math.sqrt(0.0015 / 1.8), rel=0.1)


def test_is_above_one_lies_inside_its_interval():
    """A pruned hierarchical constrained search can miss tools free-form finds: Rc = 10/40,
    Rf = 14/40 (8 shared hits, 6 free-only), IS = 1.4 — inside its interval, not clipped to 1."""
    c = np.r_[np.ones(10), np.zeros(30)]
    f = np.r_[np.ones(8), np.zeros(2), np.ones(6), np.zeros(24)]
    est = is_ci(f, c, bootstrap_indices(40, 1000, 0))
    assert est.value == pytest.approx(1.4)
    assert est.lo < 1.4 < est.hi and est.hi > 1.0 and est.lo >= 0.0


def test_aggregate_values_and_seeded_bootstrap():
    rows = []
    # 4 queries: constrained hits at rank 1 on 2 of them, free-form on 1
    for c, f in [(["g"], ["g"]), (["g"], [None]), (["x"], ["x"]), (["x"], [None])]:
        m = item_metrics(c, ["g"], [1], "c_")
        m.update(item_metrics(f, ["g"], [1], "f_"))
        rows.append(m)
    a = aggregate(rows, [1], resamples=500, seed=3)
    assert a["Rc@1"]["value"] == 0.5 and a["Rf@1"]["value"] == 0.25
    assert a["IS@1"]["value"] == 0.5
    # IS@1's interval is the delta method over the very resamples of Rc@1 and Rf@1
    assert a["IS@1"] == is_ci([1, 0, 0, 0], [1, 1, 0, 0], bootstrap_indices(4, 500, 3)).to_dict()
    assert 0.0 <= a["Rc@1"]["lo"] <= 0.5 <= a["Rc@1"]["hi"] <= 1.0
    assert aggregate(rows, [1], resamples=500, seed=3) == a  # seeded: identical intervals
    assert aggregate(rows, [1], resamples=500, seed=4)["Rc@1"]["value"] == 0.5
    assert "IS@1" not in aggregate(rows, [1], resamples=50, with_free=False)


def test_bootstrap_interval_of_constant_is_degenerate():
    idx = bootstrap_indices(10, 100, 0)
    assert idx.shape == (100, 10)
    assert mean_ci([1.0] * 10, idx) == Estimate(1.0, 1.0, 1.0)
