"""Every registered metric of an evaluation: per item (a samples.jsonl row's ``metrics``) and over
items (results.json's ``metrics``, each with its 95% interval). Which metrics, under which names,
with which aggregation: registry.py."""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

from toolsense.metrics.intervals import bootstrap_indices, is_ci, mean_ci
from toolsense.metrics.ranking import Ranking
from toolsense.metrics.registry import METRICS, MODES, Metric
from toolsense.utils.io import DataError

log = logging.getLogger(__name__)


def item_metrics(ranking: Ranking, gold: Sequence[str], ks: Sequence[int], prefix: str) -> dict[str, float]:
    """Every registered mean metric of one ranking: ``{prefix}{name}@{k}`` for each k and
    ``{prefix}{name}`` for a metric without a cut-off. ``prefix`` ``c_`` / ``f_`` names the decoding
    mode (a metric registered for the other mode only is skipped); another prefix computes all."""
    mode = prefix[0] if prefix in ("c_", "f_") else None
    out = {}
    for m in METRICS:
        if m.per_item is None or (mode is not None and mode not in m.modes):
            continue
        for k in (ks if m.cutoff else [None]):
            out[m.item_key(mode or "c", k, prefix)] = m.per_item(ranking, gold, k)
    return out


def _column(rows: Sequence[dict[str, float]], m: Metric, key: str) -> Optional[list[float]]:
    """The rows' values under ``key``; None for an optional metric some row lacks (samples
    written before it existed), an error naming the key for any other."""
    if all(key in r for r in rows):
        return [r[key] for r in rows]
    if m.optional:
        return None
    raise DataError(f"a samples row lacks {key!r} (metric {m.name!r}); samples written before the metric was registered "
                   "cannot be aggregated: evaluate into a fresh output_dir, or register it with optional=True")


def aggregate(rows: Sequence[dict[str, float]], ks: Sequence[int], resamples: int = 1000, seed: int = 0,
              with_free: bool = True, min_hits: int = 10) -> dict[str, dict[str, Any]]:
    """Means and 95% bootstrap intervals of every registered mean metric over ``rows`` (keys as
    produced by :func:`item_metrics` with prefixes ``c_`` and ``f_``; free-form ones only
    ``with_free``), and every ratio (``IS@k``) by intervals.is_ci (Wilson, or the delta method
    over the same resamples; flagged under ``min_hits`` constrained hits). One draw of resamples
    serves every metric, so their intervals refer to the same resampled item sets.

    Returns ``{results key: {value, lo, hi, ...}}`` in registration order (``Rc@k``, ``Rf@k``,
    ``IS@k``, ``recall_c@k``, ..., ``Rprec_f``); an optional metric that some row lacks is left out.
    """
    if not rows:
        return {}
    idx = bootstrap_indices(len(rows), resamples, seed)
    out: dict[str, dict[str, Any]] = {}
    for m in METRICS:
        for mode, k in m.series(ks, MODES if with_free else ("c",)):
            if m.aggregation == "ratio":
                base = METRICS.get(str(m.of))
                f, c = _column(rows, m, base.item_key("f", k)), _column(rows, m, base.item_key("c", k))
                if f is not None and c is not None:
                    out[m.result_key(None, k)] = is_ci(f, c, idx, min_hits=min_hits)
            elif (values := _column(rows, m, m.item_key(mode or "c", k))) is not None:
                out[m.result_key(mode, k)] = mean_ci(values, idx).to_dict()
    return out


def flag_trivial(metrics: dict[str, dict[str, Any]], ks: Sequence[int], n_tools: int, min_gold: int) -> list[str]:
    """Mark ``trivial: true`` on each constrained estimate whose cut-off reaches ``n_tools`` (the tools the system
    ranks) and so reads 100% for every item with known gold tools (registry ``saturates``): k >= n_tools, or without a
    cut-off (R-precision) every item's ``min_gold`` gold tools >= n_tools. Returns their keys."""
    keys = [m.result_key("c", k) for m in METRICS if m.saturates for k in (ks if m.cutoff else [None])
            if (k if k is not None else min_gold) >= n_tools]
    for key in (k for k in keys if k in metrics):
        metrics[key]["trivial"] = True
    return [k for k in keys if k in metrics]


def warn_trivial(results: Sequence[dict[str, Any]]) -> None:
    """One warning for every evaluation of a job with trivial values (:func:`flag_trivial`)."""
    hit = [f"{r['benchmark']}/{r['system']} ({r['n_tools']} tools: {', '.join(r['trivial'])})" for r in results if r.get("trivial")]
    if hit:
        log.warning("metrics.ks at or above the number of tools ranked: %s read 100%% for every item by construction; "
                    "flagged 'trivial' in table.md and results.json (not a score: use a k below the catalog size)", "; ".join(hit))
