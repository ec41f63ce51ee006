import math

import numpy as np
import pytest

from toolsense.metrics.aggregate import aggregate, item_metrics
from toolsense.metrics.intervals import Estimate, bootstrap_indices, is_ci, is_delta_variance, mean_ci, wilson_ci
from toolsense.metrics.ranking import hit_at, internalization_score, ndcg_at, recall_at

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


def test_ndcg_by_hand_per_item_and_over_items():
    """ToolGen reports NDCG@1/3/5; ours is NDCG@k with binary gains and the ideal over min(k, |gold|) gold tools.
    Gold {a, b}, ranking [b, x, a] at k = 3: DCG = 1 + 1/log2(4) = 1.5, IDCG = 1 + 1/log2(3) = 1.63093, NDCG = 0.91972;
    at k = 2 only b is found: 1 / 1.63093 = 0.61315; at k = 1: 1."""
    assert ndcg_at(["b", "x", "a"], ["a", "b"], 3) == pytest.approx(0.919721, abs=1e-6)
    assert ndcg_at(["b", "x", "a"], ["a", "b"], 2) == pytest.approx(0.613147, abs=1e-6)
    assert ndcg_at(["b", "x", "a"], ["a", "b"], 1) == 1.0
    rows = [item_metrics(r, ["a", "b"], [3], "c_") for r in (["b", "x", "a"], ["x", "y", "a"])]
    assert [r["c_ndcg@3"] for r in rows] == pytest.approx([0.919721, 0.5 / 1.630930], abs=1e-6)
    est = aggregate(rows, [3], resamples=200, with_free=False)["ndcg_c@3"]  # a registered mean: bootstrap interval
    assert est["value"] == pytest.approx((0.919721 + 0.306574) / 2, abs=1e-6) and est["lo"] < est["value"] < est["hi"]


def test_is_degenerate_cases():
    assert internalization_score(0.0, 0.0) == 0.0
    assert internalization_score(0.3, 0.0) == 0.0
    assert internalization_score(0.0, 0.5) == 0.0
    assert internalization_score(0.5, 0.5) == 1.0
    assert internalization_score(0.2, 0.8) == pytest.approx(0.25)
    idx = bootstrap_indices(4, 50, 0)
    none = is_ci([1, 0, 1, 0], [0, 0, 0, 0], idx)  # Rc = 0: no information, not a zero-width 0
    assert (none["value"], none["lo"], none["hi"], none["hits"], none["few_hits"]) == (0.0, 0.0, 1.0, 0, True)


def test_flat_is_is_a_conditional_proportion_with_a_wilson_interval():
    """Free-form hits a subset of the constrained ones (a flat index): IS = P(free | constrained).
    3 of 3 hits gives 1.00 with the Wilson interval [0.4385, 1] — not the zero-width [1, 1] a
    bootstrap of three identical hits gives; 8 of 10 gives [0.4902, 0.9433] (by hand:
    centre (0.8 + z²/20) / (1 + z²/10) = 0.71674, half-width 1.41601 · sqrt(0.016 + z²/400) = 0.22658)."""
    est = is_ci([1, 1, 1, 0], [1, 1, 1, 0], np.array([[0, 1, 2, 3]] * 3))
    assert est["method"] == "wilson" and est["value"] == 1.0 and est["hi"] == 1.0
    assert est["lo"] == pytest.approx(0.438502, abs=1e-5)
    assert est["hits"] == 3 and est["few_hits"]  # under min_hits = 10: flagged
    f, c = [1] * 8 + [0] * 2 + [0] * 5, [1] * 10 + [0] * 5
    est = is_ci(f, c, bootstrap_indices(15, 200, 0), min_hits=10)
    assert est["value"] == pytest.approx(0.8) and not est["few_hits"] and est["hits"] == 10
    assert (est["lo"], est["hi"]) == (pytest.approx(0.490161, abs=1e-5), pytest.approx(0.943319, abs=1e-5))
    assert wilson_ci(8, 10) == (pytest.approx(0.490161, abs=1e-5), pytest.approx(0.943319, abs=1e-5))
    # 24 of 25 (Gemma's flat 0.96): the delta method gave [0.90, 1.02]; the proportion's interval stays below 1
    est = is_ci([1] * 24 + [0] * 6, [1] * 25 + [0] * 5, bootstrap_indices(30, 200, 0))
    assert est["value"] == pytest.approx(0.96) and est["hi"] < 1.0 and est["lo"] == pytest.approx(0.8046, abs=1e-3)


def test_is_delta_method_uses_the_paired_bootstrap_covariance():
    """Var(IS) by the delta method, by hand: Rf = 1/2, Rc = 3/4, Var(Rf) = 1/16, Var(Rc) = 11/192,
    Cov = 1/32 give (1/16)/(9/16) + (1/4)(11/192)/(81/256) − 2(1/2)(1/32)/(27/64)
    = 27/243 + 11/243 − 18/243 = 20/243 (38/243 without the covariance). is_ci uses it where a
    free-form hit has no constrained hit (f = [1,0,1,1], c = [1,1,0,1]: IS = 1) over four
    hand-picked resamples: means of f (3/4, 1/2, 1, 1), of c (3/4, 1, 1/2, 1)."""
    assert is_delta_variance(0.5, 0.75, 1 / 16, 11 / 192, 1 / 32) == pytest.approx(20 / 243)
    f, c = [1, 0, 1, 1], [1, 1, 0, 1]
    idx = np.array([[0, 1, 2, 3], [0, 0, 1, 1], [2, 2, 3, 3], [0, 3, 0, 3]])
    mf, mc = np.asarray(f, float)[idx].mean(1), np.asarray(c, float)[idx].mean(1)
    cov = np.cov(mf, mc, ddof=1)
    se = math.sqrt(is_delta_variance(0.75, 0.75, cov[0, 0], cov[1, 1], cov[0, 1]))
    est = is_ci(f, c, idx)
    assert est["method"] == "delta" and est["value"] == pytest.approx(1.0)
    assert est["lo"] == pytest.approx(max(0.0, 1 - Z * se)) and est["hi"] == pytest.approx(1 + Z * se)
    assert est["hi"] > 1.0  # a hierarchical IS may exceed 1: not clipped


def test_is_above_one_lies_inside_its_interval():
    """A pruned hierarchical constrained search can miss tools free-form finds: Rc = 10/40,
    Rf = 14/40 (8 shared hits, 6 free-only), IS = 1.4 — inside its interval, not clipped to 1."""
    c = np.r_[np.ones(10), np.zeros(30)]
    f = np.r_[np.ones(8), np.zeros(2), np.ones(6), np.zeros(24)]
    est = is_ci(f, c, bootstrap_indices(40, 1000, 0))
    assert est["value"] == pytest.approx(1.4) and est["method"] == "delta"
    assert est["lo"] < 1.4 < est["hi"] and est["hi"] > 1.0 and est["lo"] >= 0.0


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
    # IS@1: free-form hits a subset of the constrained ones, so 1 of 2 constrained hits (Wilson), flagged
    assert a["IS@1"] == is_ci([1, 0, 0, 0], [1, 1, 0, 0], bootstrap_indices(4, 500, 3))
    assert a["IS@1"]["method"] == "wilson" and a["IS@1"]["few_hits"] and a["IS@1"]["hits"] == 2
    assert not aggregate(rows, [1], resamples=50, min_hits=2)["IS@1"]["few_hits"]
    assert 0.0 <= a["Rc@1"]["lo"] <= 0.5 <= a["Rc@1"]["hi"] <= 1.0
    assert aggregate(rows, [1], resamples=500, seed=3) == a  # seeded: identical intervals
    assert aggregate(rows, [1], resamples=500, seed=4)["Rc@1"]["value"] == 0.5
    assert "IS@1" not in aggregate(rows, [1], resamples=50, with_free=False)


def test_bootstrap_interval_of_constant_is_degenerate():
    idx = bootstrap_indices(10, 100, 0)
    assert idx.shape == (100, 10)
    assert mean_ci([1.0] * 10, idx) == Estimate(1.0, 1.0, 1.0)
