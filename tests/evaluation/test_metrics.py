import math

import pytest

from toolsense.evaluation.metrics import (Estimate, aggregate, hit_at, internalization_score, is_ci, item_metrics,
                                          mean_ci, bootstrap_indices, ndcg_at, recall_at)


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
    assert is_ci(Estimate(0.4, 0.3, 0.5), Estimate(0.0, 0.0, 0.0)) == Estimate(0.0, 0.0, 0.0)


def test_is_delta_method_interval_and_clipping():
    z = 1.959964
    rf, rc = Estimate(0.3, 0.3 - z * 0.05, 0.3 + z * 0.05), Estimate(0.6, 0.6 - z * 0.04, 0.6 + z * 0.04)
    est = is_ci(rf, rc)
    se = math.sqrt(0.05**2 / 0.36 + 0.09 * 0.04**2 / 0.6**4)
    assert est.value == pytest.approx(0.5)
    assert est.lo == pytest.approx(0.5 - z * se) and est.hi == pytest.approx(0.5 + z * se)
    wide = is_ci(Estimate(0.9, 0.5, 1.0), Estimate(0.95, 0.5, 1.0))
    assert wide.hi == 1.0 and wide.lo >= 0.0


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
    assert 0.0 <= a["Rc@1"]["lo"] <= 0.5 <= a["Rc@1"]["hi"] <= 1.0
    assert aggregate(rows, [1], resamples=500, seed=3) == a  # seeded: identical intervals
    assert aggregate(rows, [1], resamples=500, seed=4)["Rc@1"]["value"] == 0.5
    assert "IS@1" not in aggregate(rows, [1], resamples=50, with_free=False)


def test_bootstrap_interval_of_constant_is_degenerate():
    idx = bootstrap_indices(10, 100, 0)
    assert idx.shape == (100, 10)
    assert mean_ci([1.0] * 10, idx) == Estimate(1.0, 1.0, 1.0)
