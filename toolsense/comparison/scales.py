"""A contrast on several scales (issue 34: a verdict shown across k and scale): pp, normalized gain
and log-odds of per-item hits, with the two-level interval of seed_stats.seed_item_interval — seeds
within a configuration and items within seeds, the statistic linearized by the delta method — so a
sensitivity table's cell at the registered (k, scale) agrees with the finding's headline. Two
shapes: :func:`gain_contrast` — each side's gain from Stage 1 to Stage 2 of the same runs (finding
1), and :func:`rate_contrast` — B's hit rate minus A's (findings 2 and 7), paired on shared items
(and by seed where both hold the same seeds) or each side's items on their own.

Scales of one side's gain over its items (a: Stage 1's per-item hit, b: Stage 2's, n items):
``pp`` = Σ(b − a) / n; ``normalized`` = Σ(b − a) / Σ(1 − a) (the share of Stage 1's misses
recovered, net); ``log_odds`` = logit((Σb + ½) / (n + 1)) − logit((Σa + ½) / (n + 1)).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from toolsense.comparison.seed_stats import Term, seed_item_interval

Pairs = Mapping[Any, tuple[Mapping[str, float], Mapping[str, float]]]
"""One configuration's runs by seed: (Stage 1's, Stage 2's) per-item hits of the same run."""


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1 - p))


SCALES: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "pp": lambda a, b, n: (b - a) / n,
    "normalized": lambda a, b, n: (b - a) / (n - a),
    "log_odds": lambda a, b, n: _logit((b + 0.5) / (n + 1)) - _logit((a + 0.5) / (n + 1)),
}
"""Gain of one side from (Σ Stage-1 hits, Σ Stage-2 hits, items)."""
BOUNDS = {"pp": (-1.0, 1.0)}
"""The range a scale's contrast cannot leave (an interval is clipped to it)."""


def _estimate(terms: list[Term], stat: Callable[[np.ndarray, np.ndarray], float], scale: str) -> dict[str, Any] | None:
    """seed_item_interval of ``stat``; None where the statistic is undefined (no headroom on a side)."""
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            return seed_item_interval(terms, BOUNDS.get(scale), transform=stat)
    except ValueError:
        return None


def gain_contrast(first: Mapping[str, Pairs], second: Mapping[str, Pairs], scale: str) -> dict[str, Any] | None:
    """Mean over groups of ``first``'s gain minus ``second``'s on ``scale`` (see the module doc), each
    group's runs by seed (a run in both sides one unit: its seed drawn once for both), the items of
    the two sides apart; None when no group has both or a gain is undefined."""
    if scale not in SCALES:
        raise ValueError(f"sensitivity scale {scale!r}: one of {sorted(SCALES)}")
    groups = [g for g in first if g in second and first[g] and second[g]]
    if not groups:
        return None
    terms: list[Term] = []
    for side, runs in enumerate((first, second)):
        for g in groups:
            for stage in (0, 1):
                terms.append((1.0, [((g, str(s)), {f"{side}:{i}": float(p[stage][i]) for i in p[0] if i in p[1]}, None)
                                    for s, p in runs[g].items()]))

    def stat(r: np.ndarray, n: np.ndarray) -> float:
        r, n = r.reshape(2, len(groups), 2), n.reshape(2, len(groups), 2)
        gain = SCALES[scale](r[..., 0] * n[..., 0], r[..., 1] * n[..., 1], n[..., 0])  # [side, group]
        return float(gain[0].mean() - gain[1].mean())

    return _estimate(terms, stat, scale)


RATE_SCALES: dict[str, Callable[..., np.ndarray]] = {
    "pp": lambda ha, na, hb, nb, up: hb / nb - ha / na,
    "normalized": lambda ha, na, hb, nb, up: (hb / nb - ha / na) / ((1 - ha / na) if up else ha / na),
    "log_odds": lambda ha, na, hb, nb, up: _logit((hb + 0.5) / (nb + 1)) - _logit((ha + 0.5) / (na + 1)),
}
"""B's rate minus A's from (Σ A hits, A observations, Σ B hits, B observations, whether B is expected
above A): ``normalized`` divides by the room in the expected direction — A's misses when B should
be higher (the share of them B recovers), A's hits when lower (the share B loses)."""


Runs = Mapping[int, Mapping[str, float]]
"""One side's runs: ``trainer.seed -> item id -> hit``."""


def rate_contrast(arms: Mapping[str, tuple[Runs, Runs]], scale: str, paired: bool, up: bool = True) -> dict[str, Any] | None:
    """Mean over groups of B's rate minus A's on ``scale`` (RATE_SCALES); ``arms``: group -> (A's runs,
    B's runs), each ``seed -> item id -> hit``. ``paired``: A and B score the same items (those both
    hold), paired by seed where both arms hold the same seeds (one unit per seed, as two evaluations of
    one run or two runs of one seed); else each side's items are its own (the same seeds still one
    run each, e.g. one run scored on two benchmarks). None when nothing pairs or the contrast is undefined."""
    if scale not in RATE_SCALES:
        raise ValueError(f"sensitivity scale {scale!r}: one of {sorted(RATE_SCALES)}")
    groups = [g for g, (a, b) in arms.items() if a and b]
    terms: list[Term] = []
    for g in groups:
        a, b = arms[g]
        ids = [{str(i) for run in side.values() for i in run} for side in (a, b)]
        keep = [ids[0] & ids[1]] * 2 if paired else ids
        same = set(a) == set(b)
        for side, runs in enumerate((a, b)):
            unit = g if same else f"{g}:{'AB'[side]}"
            terms.append((1.0, [((unit, str(s)), {(i if paired else f"{side}:{i}"): float(v) for i, v in run.items()
                                                  if str(i) in keep[side]}, None) for s, run in runs.items()]))
    if not terms or not all(any(n for _, n, _ in t[1]) for t in terms):
        return None

    def stat(r: np.ndarray, n: np.ndarray) -> float:
        r, n = r.reshape(len(groups), 2), n.reshape(len(groups), 2)
        return float(np.mean(RATE_SCALES[scale](r[:, 0] * n[:, 0], n[:, 0], r[:, 1] * n[:, 1], n[:, 1], up)))

    return _estimate(terms, stat, scale)
