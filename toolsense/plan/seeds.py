"""Seeds per arm for a paired difference of two arms' means across seeds: the analysis plan's power calculation.

The crossed design of seed_stats.py: the difference over n seeds per arm has variance sd_b² / n + se_w², sd_b the SD
across seeds of a run's paired difference, se_w its standard error over the items, shared by every seed (the same
items in every run), which more seeds do not shrink. Normal approximation: n = ⌈sd_b² / ((effect / (z_{1−α/2} +
z_power))² − se_w²)⌉; the t approximation (what the verdict's interval uses): the smallest n with
(t_{1−α/2, ν} + t_{power, ν}) · √(sd_b² / n + se_w²) ≤ effect, ν the Welch–Satterthwaite degrees of freedom of the two
parts, as seed_stats.py computes them: (sd_b² / n + se_w²)² / ((sd_b² / n)² / (n − 1) + se_w⁴ / (items − 1)) — n − 1
where the items add nothing, more where they dominate. Never fewer than 2 seeds (one has no SD)."""

from __future__ import annotations

import math


def welch_df(between_seed_sd: float, within_seed_se: float, n: int, items: int = 0) -> float:
    """Welch–Satterthwaite degrees of freedom of sd_b² / n (n − 1 df) + se_w² (``items`` − 1 df; 0: infinitely many)."""
    a, b = between_seed_sd ** 2 / n, within_seed_se ** 2
    if a == 0:
        return math.inf if items == 0 else float(items - 1)
    den = a * a / (n - 1) + (b * b / (items - 1) if items > 1 else 0.0)
    return (a + b) ** 2 / den


def detectable(between_seed_sd: float, within_seed_se: float, n: int, alpha: float = 0.05, power: float = 0.8,
               method: str = "t", items: int = 0) -> float:
    """The smallest difference ``n`` seeds per arm detect with probability ``power`` (module doc): the minimum detectable
    effect, (q_{1−α/2} + q_power) · √(sd_b² / n + se_w²), q from t on the Welch df (``t``) or the normal."""
    from scipy.stats import norm, t

    se = math.sqrt(between_seed_sd ** 2 / n + within_seed_se ** 2)
    if method == "normal":
        return (norm.ppf(1 - alpha / 2) + norm.ppf(power)) * se
    df = welch_df(between_seed_sd, within_seed_se, n, items)
    return (t.ppf(1 - alpha / 2, df) + t.ppf(power, df)) * se


def seeds_needed(between_seed_sd: float, within_seed_se: float, effect: float, alpha: float = 0.05, power: float = 0.8,
                 method: str = "t", most: int = 1000, items: int = 0) -> int | None:
    """Seeds per arm for the interval of the difference to exclude 0 with probability ``power`` when it is ``effect``
    (module doc); None where no number of seeds (up to ``most``) does: the items alone leave the interval too wide."""
    from scipy.stats import norm

    room = (effect / (norm.ppf(1 - alpha / 2) + norm.ppf(power))) ** 2 - within_seed_se ** 2
    if room <= 0:
        return None
    n = max(2, math.ceil(between_seed_sd ** 2 / room - 1e-12))
    while method == "t" and n <= most:
        if detectable(between_seed_sd, within_seed_se, n, alpha, power, "t", items) <= effect:
            return n
        n += 1
    return n if method == "normal" else None
