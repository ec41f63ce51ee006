"""The paper's statistics on constructed inputs with hand-computed values."""

from __future__ import annotations

import math

import pytest

from toolsense.evaluation.stats import (cohens_d, drift_ratio, fleiss_kappa, mean_sd, paired_bootstrap_diff,
                                        pooled_bootstrap)

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


def test_paired_bootstrap_diff_pairs_items():
    same = [1, 0, 1, 0, 1, 0]
    assert paired_bootstrap_diff(same, same) == {"value": 0.0, "lo": 0.0, "hi": 0.0, "n": 6}  # unpaired would spread
    d = paired_bootstrap_diff([0, 0, 0, 0], [1, 1, 1, 1])
    assert (d["value"], d["lo"], d["hi"]) == (1.0, 1.0, 1.0)
    d = paired_bootstrap_diff([1, 1, 1, 1, 0], [1, 1, 0, 0, 0])
    assert d["value"] == pytest.approx(-0.4) and d["hi"] == 0.0 and d["lo"] >= -1.0
    with pytest.raises(ValueError, match="equally many"):
        paired_bootstrap_diff([1], [1, 0])


def test_pooled_bootstrap_mean_and_ratio():
    assert pooled_bootstrap([[1, 0], [1, 1]])["value"] == pytest.approx(0.75)
    r = pooled_bootstrap([[1, 0], [1, 0]], denominators=[[1, 1], [1, 1]])
    assert r["value"] == pytest.approx(0.5) and 0.0 <= r["lo"] <= 0.5 <= r["hi"] <= 1.0
    assert pooled_bootstrap([[1, 1], [1]]) == {"value": 1.0, "lo": 1.0, "hi": 1.0}


def test_drift_ratio():
    assert drift_ratio(0.25, 0.05) == pytest.approx(5.0)
    assert drift_ratio(0.25, 0.0) is None
