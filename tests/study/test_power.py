"""#47: the plan's power calculation (plan/seeds.py: seeds per arm for a paired difference of arm means across
seeds, crossed design: variance sd_b² / n + se_w²), against values worked by hand."""

from __future__ import annotations

import pytest

from toolsense.plan.seeds import detectable, seeds_needed, welch_df


def test_seeds_needed_against_hand_computed_values():
    # normal: z_.975 + z_.8 = 1.95996 + 0.84162 = 2.80158; (0.08 / 2.80158)² = 0.00081540; minus se_w² 0.0004 = 0.00041540;
    # sd_b² / that = 0.0036 / 0.00041540 = 8.67 -> 9 seeds per arm
    assert seeds_needed(0.06, 0.02, 0.08, method="normal") == 9
    # t on the Welch-Satterthwaite df (items infinitely many): n = 9: a = 0.0036/9 = 0.0004, df = (0.0008)² / (0.0004² / 8)
    # = 32, (t_.975,32 2.0369 + t_.8,32 0.8530)² · 0.0008 = 0.006681 > 0.08² = 0.0064; n = 10: a = 0.00036,
    # df = 0.00076² / (0.00036² / 9) = 40.1, (2.0210 + 0.8507)² · 0.00076 = 0.006267 <= 0.0064 -> 10
    assert seeds_needed(0.06, 0.02, 0.08) == 10
    # 50 items: their part has 49 df, df at n = 10 = 0.00076² / (0.00036² / 9 + 0.0004² / 49) = 32.7, and
    # (2.0339 + 0.8528)² · 0.00076 = 0.006339 <= 0.0064 still -> 10; the df fall (fewer items: a wider t)
    assert seeds_needed(0.06, 0.02, 0.08, items=50) == 10 and welch_df(0.06, 0.02, 10, 50) < welch_df(0.06, 0.02, 10)
    assert welch_df(0.10, 0.0, 7) == 6 and welch_df(0.06, 0.02, 9) == pytest.approx(32.0)
    # no item noise: normal n = 2.80158² · (0.1 / 0.1)² = 7.85 -> 8; t: n = 9 gives (2.3060 + 0.8889)² = 10.21 > 9,
    # n = 10 gives (2.2622 + 0.8834)² = 9.89 <= 10 -> 10
    assert seeds_needed(0.10, 0.0, 0.10, method="normal") == 8 and seeds_needed(0.10, 0.0, 0.10) == 10
    # a higher bar needs more seeds; alpha 0.10: z_.95 + z_.8 = 2.48648, 0.0036 / ((0.08 / 2.48648)² - 0.0004) = 5.67 -> 6
    assert seeds_needed(0.06, 0.02, 0.08, power=0.9) > 10 and seeds_needed(0.06, 0.02, 0.08, alpha=0.10, method="normal") == 6


def test_no_number_of_seeds_beats_the_items_own_noise_and_one_seed_is_never_enough():
    # (0.08 / 2.80158)² = 0.000815 < se_w² 0.0009: the shared items alone leave the interval wider than the effect
    assert seeds_needed(0.06, 0.03, 0.08) is None and seeds_needed(0.06, 0.03, 0.08, method="normal") is None
    assert seeds_needed(0.0, 0.0, 0.10, method="normal") == 2 and seeds_needed(0.001, 0.0, 0.5) == 2


def test_the_detectable_difference_is_what_that_many_seeds_need():
    # 5 seeds: a = 0.00072, df = 0.00112² / (0.00072² / 4) = 9.68, (t_.975 2.2346 + t_.8 0.8809) · √0.00112 = 0.1043
    assert detectable(0.06, 0.02, 5) == pytest.approx(0.1043, abs=5e-4)
    assert detectable(0.10, 0.0, 8, method="normal") == pytest.approx(2.80158 * 0.10 / 8 ** 0.5, rel=1e-4)
    for n in (2, 3, 5, 10, 30):  # inverse of seeds_needed: n seeds detect d, and seeds_needed(d) is at most n
        d = detectable(0.06, 0.02, n)
        assert seeds_needed(0.06, 0.02, d + 1e-9) <= n
        assert n == 2 or seeds_needed(0.06, 0.02, d * 1.02) < seeds_needed(0.06, 0.02, d * 0.98)
