"""Seeds per arm for a paired difference of two arms' means across seeds: the analysis plan's power calculation.

The crossed design of seed_stats.py: the difference over n seeds per arm has variance sd_b² / n + se_w², sd_b the SD
across seeds of a run's paired difference, se_w its standard error over the items, shared by every seed (the same
items in every run), which more seeds do not shrink. Normal approximation: n = ⌈sd_b² / ((effect / (z_{1−α/2} +
z_power))² − se_w²)⌉; the t approximation (what the verdict's interval uses: ν = n − 1): the smallest n with
(t_{1−α/2, n−1} + t_{power, n−1}) · √(sd_b² / n + se_w²) ≤ effect. Never fewer than 2 seeds (one has no SD)."""

from __future__ import annotations

import math


def seeds_needed(between_seed_sd: float, within_seed_se: float, effect: float, alpha: float = 0.05, power: float = 0.8,
                 method: str = "t", most: int = 1000) -> int | None:
    """Seeds per arm for the interval of the difference to exclude 0 with probability ``power`` when it is ``effect``
    (module doc); None where no number of seeds (up to ``most``) does: the items alone leave the interval too wide."""
    from scipy.stats import norm, t

    room = (effect / (norm.ppf(1 - alpha / 2) + norm.ppf(power))) ** 2 - within_seed_se ** 2
    if room <= 0:
        return None
    n = max(2, math.ceil(between_seed_sd ** 2 / room - 1e-12))
    while method == "t" and n <= most:
        if (t.ppf(1 - alpha / 2, n - 1) + t.ppf(power, n - 1)) * math.sqrt(between_seed_sd ** 2 / n + within_seed_se ** 2) <= effect:
            return n
        n += 1
    return n if method == "normal" else None
