"""A contrast on several scales (issue 34: a verdict shown across k and scale): pp, normalized gain
and log-odds of per-item hits, with cluster-bootstrap intervals over items (each item with all its
seeds), as stats.contrast resamples. Two shapes: :func:`gain_contrast` — each side's gain from
Stage 1 to Stage 2 of the same runs (finding 1), and :func:`rate_contrast` — B's hit rate minus A's
(findings 2 and 7), paired on shared items or each side drawn on its own.

Scales of one side's gain over its items (a: Stage 1's per-item hit, b: Stage 2's, n items):
``pp`` = Σ(b − a) / n; ``normalized`` = Σ(b − a) / Σ(1 − a) (the share of Stage 1's misses
recovered, net); ``log_odds`` = logit((Σb + ½) / (n + 1)) − logit((Σa + ½) / (n + 1)).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from toolsense.comparison.stats import _interval, cluster_draws

Pairs = Sequence[tuple[Mapping[str, float], Mapping[str, float]]]


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1 - p))


SCALES: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "pp": lambda a, b, n: (b - a) / n,
    "normalized": lambda a, b, n: (b - a) / (n - a),
    "log_odds": lambda a, b, n: _logit((b + 0.5) / (n + 1)) - _logit((a + 0.5) / (n + 1)),
}
"""Gain of one side from (Σ Stage-1 hits, Σ Stage-2 hits, items), arrays over resamples."""


def gain_contrast(first: Mapping[str, Pairs], second: Mapping[str, Pairs], scale: str, resamples: int = 1000,
                  seed: int = 0) -> dict[str, Any] | None:
    """Mean over groups of ``first``'s gain minus ``second``'s on ``scale`` (see the module doc),
    with the cluster-bootstrap interval over the items of both sides; None when no group has both."""
    if scale not in SCALES:
        raise ValueError(f"sensitivity scale {scale!r}: one of {sorted(SCALES)}")
    groups = [g for g in first if g in second and first[g] and second[g]]
    if not groups:
        return None
    ids = list(dict.fromkeys(str(i) for side in (first, second) for g in groups for a, b in side[g]
                             for i in a if i in b))
    pos = {i: k for k, i in enumerate(ids)}
    acc = np.zeros((3, 2, len(groups), len(ids)))  # (Σa, Σb, n) per side, group, item
    for s, side in enumerate((first, second)):
        for gi, g in enumerate(groups):
            for a, b in side[g]:
                for i in a:
                    if i in b:
                        acc[:, s, gi, pos[str(i)]] += (float(a[i]), float(b[i]), 1.0)
    idx = cluster_draws(len(ids), resamples, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = SCALES[scale](*acc[:, :, :, idx].sum(-1))  # [side, group, resample]
        point = SCALES[scale](*acc.sum(-1))  # [side, group]
    return _interval(float(point[0].mean() - point[1].mean()), draws[0].mean(0) - draws[1].mean(0), len(ids))


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


def _side_sums(runs: Mapping[str, Runs], groups: Sequence[str], ids: Sequence[str]) -> np.ndarray:
    """``[2, group, item]``: each item's hits summed over a group's seeds, and its observations."""
    pos = {i: n for n, i in enumerate(ids)}
    acc = np.zeros((2, len(groups), len(ids)))
    for gi, g in enumerate(groups):
        for items in runs[g].values():
            for i, v in items.items():
                if str(i) in pos:
                    acc[:, gi, pos[str(i)]] += (float(v), 1.0)
    return acc


def rate_contrast(arms: Mapping[str, tuple[Runs, Runs]], scale: str, paired: bool, resamples: int = 1000,
                  up: bool = True, seed: int = 0) -> dict[str, Any] | None:
    """Mean over groups of B's rate minus A's on ``scale`` (RATE_SCALES); ``arms``: group -> (A's runs,
    B's runs), each ``seed -> item id -> hit``. ``paired``: A and B score the same items, drawn once per
    resample (each item with all its seeds); else each side's items are drawn on their own."""
    if scale not in RATE_SCALES:
        raise ValueError(f"sensitivity scale {scale!r}: one of {sorted(RATE_SCALES)}")
    groups = [g for g, (a, b) in arms.items() if a and b]
    if not groups:
        return None
    side_ids = [list(dict.fromkeys(str(i) for g in groups for run in arms[g][s].values() for i in run)) for s in (0, 1)]
    if paired:
        shared = [i for i in side_ids[0] if i in set(side_ids[1])]
        side_ids = [shared, shared]
    if not all(side_ids):
        return None
    sums = [_side_sums({g: arms[g][s] for g in groups}, groups, side_ids[s]) for s in (0, 1)]
    draws_a = cluster_draws(len(side_ids[0]), resamples, seed)
    draws_b = draws_a if paired else cluster_draws(len(side_ids[1]), resamples, seed + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        point = RATE_SCALES[scale](*sums[0].sum(-1), *sums[1].sum(-1), up)  # [group]
        # [group, resample]
        draws = RATE_SCALES[scale](*sums[0][:, :, draws_a].sum(-1), *sums[1][:, :, draws_b].sum(-1), up)
    return _interval(float(np.mean(point)), draws.mean(0), len(side_ids[0]))
