"""#47: the plan's power calculation (comparison/power.py: seeds per arm for a paired difference of arm means across
seeds, crossed design: variance sd_b² / n + se_w²), against values worked by hand."""

from __future__ import annotations

from toolsense.comparison.power import seeds_needed


def test_seeds_needed_against_hand_computed_values():
    # normal: z_.975 + z_.8 = 1.95996 + 0.84162 = 2.80158; (0.08 / 2.80158)² = 0.00081540; minus se_w² 0.0004 = 0.00041540;
    # sd_b² / that = 0.0036 / 0.00041540 = 8.67 -> 9 seeds per arm
    assert seeds_needed(0.06, 0.02, 0.08, method="normal") == 9
    # t (df n - 1): n = 12: (2.2010 + 0.8755)² · (0.0036/12 + 0.0004) = 9.4650 · 0.000700 = 0.006625 > 0.08² = 0.0064;
    # n = 13: (2.1788 + 0.8726)² · (0.0036/13 + 0.0004) = 9.3112 · 0.000677 = 0.006303 <= 0.0064 -> 13
    assert seeds_needed(0.06, 0.02, 0.08) == 13
    # no item noise: normal n = 2.80158² · (0.1 / 0.1)² = 7.85 -> 8; t: n = 9 gives (2.3060 + 0.8889)² = 10.21 > 9,
    # n = 10 gives (2.2622 + 0.8834)² = 9.89 <= 10 -> 10
    assert seeds_needed(0.10, 0.0, 0.10, method="normal") == 8 and seeds_needed(0.10, 0.0, 0.10) == 10
    # a higher bar needs more seeds; alpha 0.10: z_.95 + z_.8 = 2.48648, 0.0036 / ((0.08 / 2.48648)² - 0.0004) = 5.67 -> 6
    assert seeds_needed(0.06, 0.02, 0.08, power=0.9) > 13 and seeds_needed(0.06, 0.02, 0.08, alpha=0.10, method="normal") == 6


def test_no_number_of_seeds_beats_the_items_own_noise_and_one_seed_is_never_enough():
    # (0.08 / 2.80158)² = 0.000815 < se_w² 0.0009: the shared items alone leave the interval wider than the effect
    assert seeds_needed(0.06, 0.03, 0.08) is None and seeds_needed(0.06, 0.03, 0.08, method="normal") is None
    assert seeds_needed(0.0, 0.0, 0.10, method="normal") == 2 and seeds_needed(0.001, 0.0, 0.5) == 2
