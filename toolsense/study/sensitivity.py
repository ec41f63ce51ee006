"""How a verdict moves with k and with the scale (issue 34): finding 1's Stage-2 gain contrast
(standard − realistic) recomputed at every k of ``analysis.sensitivity_ks`` on every scale of
``analysis.sensitivity_scales``, per configuration and averaged over the configurations that
retrieve (constrained standard Rc@k after Stage 2 at or above ``analysis.retrieval_floor``; the
others are listed, not averaged in). A verdict that is not the same in every cell "depends on k"
or "depends on the scale" — the report says which, beside the registered one.

Scales of one side's gain over its items (a: Stage 1's per-item hit, b: Stage 2's, n items):
``pp`` = Σ(b − a) / n; ``normalized`` = Σ(b − a) / Σ(1 − a) (the share of Stage 1's misses
recovered, net); ``log_odds`` = logit((Σb + ½) / (n + 1)) − logit((Σa + ½) / (n + 1)). Intervals
resample the items of both sides in one draw (each with all its seeds), as stats.contrast does.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from toolsense.comparison.stats import _interval, cluster_draws
from toolsense.reporting.tables import markdown_table, pct
from toolsense.study.sweep import Sweep, item_pairs, verdict
from toolsense.utils.io import DataError

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
    ids = list(dict.fromkeys(str(i) for side in (first, second) for g in groups for a, b in side[g] for i in a if i in b))
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


def _side_sums(runs: Mapping[str, Mapping[int, Mapping[str, float]]], groups: Sequence[str], ids: Sequence[str]) -> np.ndarray:
    """``[2, group, item]``: each item's hits summed over a group's seeds, and its observations."""
    pos = {i: n for n, i in enumerate(ids)}
    acc = np.zeros((2, len(groups), len(ids)))
    for gi, g in enumerate(groups):
        for items in runs[g].values():
            for i, v in items.items():
                if str(i) in pos:
                    acc[:, gi, pos[str(i)]] += (float(v), 1.0)
    return acc


def rate_contrast(arms: Mapping[str, tuple[Mapping[int, Mapping[str, float]], Mapping[int, Mapping[str, float]]]],
                  scale: str, paired: bool, resamples: int = 1000, up: bool = True, seed: int = 0) -> dict[str, Any] | None:
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
        draws = RATE_SCALES[scale](*sums[0][:, :, draws_a].sum(-1), *sums[1][:, :, draws_b].sum(-1), up)  # [group, resample]
    return _interval(float(np.mean(point)), draws.mean(0), len(side_ids[0]))


def depends_on(cells: Mapping[tuple[Any, str], Mapping[str, Any]], ks: Sequence[Any], scales: Sequence[str]) -> list[str]:
    """"k" and / or "the scale" where a cell's verdict differs along that axis of the table."""
    present = [(k, s) for k in ks for s in scales if (k, s) in cells]
    ks = list(dict.fromkeys(k for k, _ in present))
    scales = list(dict.fromkeys(s for _, s in present))
    along_k = any(_flip([cells[(k, s)]["verdict"] for k in ks if (k, s) in cells]) for s in scales)
    along_s = any(_flip([cells[(k, s)]["verdict"] for s in scales if (k, s) in cells]) for k in ks)
    return [w for w, flips in (("k", along_k), ("the scale", along_s)) if flips]


def _flip(verdicts: Sequence[str]) -> bool:
    return len({v.split(" ")[0] for v in verdicts if v != "n/a"}) > 1


def lift_sensitivity(g: Sweep, rows: Sequence[str], ks: Sequence[int], scales: Sequence[str], floor: float,
                     resamples: int, k_table: int = 5) -> dict[str, Any]:
    """Finding 1 at every (k, scale): the pooled contrast over the rows that retrieve (constrained
    standard Rc@``k_table`` — the study's k, the table's column — at or above ``floor``), each
    row's own, the rows below, and whether the verdict depends on k or on the scale. Per-item hits
    at every k come from the samples (each sample holds every cut-off of ``metrics.ks``)."""
    cells: dict[tuple[int, str], dict[str, Any]] = {}
    below = [r for r in rows if ((g.cell(r, f"standard Rc@{k_table}") or {}).get("value") or 0.0) < floor]
    keep = [r for r in rows if r not in below]
    not_evaluated = []
    for k in ks:
        try:
            per_row = {b: {r: item_pairs([(g, f"{r}:stage1", g, r)], f"{b} Rc@{k_table}", f"Rc@{k}") for r in rows}
                       for b in ("standard", "realistic")}
        except DataError:  # the samples hold no hit at this k (metrics.ks did not list it)
            not_evaluated.append(k)
            continue
        for scale in scales:
            pooled = gain_contrast({r: per_row["standard"][r] for r in keep}, {r: per_row["realistic"][r] for r in keep},
                                   scale, resamples)
            own = {r: gain_contrast({r: per_row["standard"][r]}, {r: per_row["realistic"][r]}, scale, resamples) for r in rows}
            cells[(k, scale)] = {"pooled": pooled, "verdict": verdict(pooled), "per_row": own,
                                 "per_row_verdict": {r: verdict(e) for r, e in own.items()}}
    ks = [k for k in ks if k not in not_evaluated]
    by_k = [cells[(k, s)]["verdict"] for s in scales for k in ks]
    return {"cells": cells, "below_floor": below, "floor": floor, "k_table": k_table, "depends_on": depends_on(cells, ks, scales),
            "stable": not _flip(by_k), "not_evaluated": not_evaluated, "rows": list(rows), "finding": 1}


def _fmt(est: dict[str, Any] | None, scale: str) -> str:
    if not est or est.get("value") is None:
        return pct(est, True)
    if scale.startswith("drift"):  # a ratio (flat / hierarchical)
        ci = f" [{est['lo']:.2f}, {est['hi']:.2f}]" if est.get("lo") is not None else " (no interval)"
        return f"{est['value']:.2f}×{ci}"
    if scale != "log_odds":
        return pct(est, True)
    ci = f" [{est['lo']:+.2f}, {est['hi']:+.2f}]" if est.get("lo") is not None else ""
    return f"{est['value']:+.2f} logit{ci}"


def sensitivity_markdown(sens: dict[str, Any], ks: Sequence[Any] | None = None, scales: Sequence[str] | None = None,
                         rows: Sequence[str] | None = None) -> str:
    """One table: a row per (k, scale) — in ``ks`` x ``scales`` order where given, else the cells' —
    the pooled estimate with its verdict, then each configuration's (``rows``, default ``sens["rows"]``)."""
    cells, rows = sens["cells"], list(rows if rows is not None else sens.get("rows", []))
    order = [(k, s) for k in ks for s in scales if (k, s) in cells] if ks is not None and scales is not None else list(cells)
    table = [["—" if k is None else k, scale, f"{_fmt(cells[(k, scale)]['pooled'], scale)} {cells[(k, scale)]['verdict']}"]
             + [f"{_fmt(cells[(k, scale)]['per_row'].get(r), scale)} {cells[(k, scale)]['per_row_verdict'].get(r, 'n/a')}"
                for r in rows] for k, scale in order]
    say = ("the verdict depends on " + " and on ".join(sens["depends_on"])) if sens["depends_on"] else "the verdict holds in every cell"
    below = ", ".join(sens.get("below_floor") or [])
    if sens.get("not_evaluated"):
        say += f" (k = {', '.join(map(str, sens['not_evaluated']))} not evaluated: the samples hold no hits there)"
    floor = (f" Below the retrieval floor (standard Rc@{sens['k_table']} < {100 * sens['floor']:.0f}%; shown, not pooled): "
             f"{below}." if below else "")
    return (markdown_table(["k", "scale", sens.get("pooled_label", "pooled (configurations that retrieve)"), *rows], table)
            + f"\nFinding {sens.get('finding', 1)} across k and scales: {say}.{floor}\n")
