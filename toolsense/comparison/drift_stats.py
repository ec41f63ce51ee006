"""Statistics of virtual-token drift between training stages, read from the runs' drift.json files
(evaluation/drift.py writes them): each run's Stage-1 -> Stage-2 terms, and the ratio of two groups'
mean relative drift (flat over hierarchical, finding 6) with an interval over runs where each side
has two or more, else from resampling each run's virtual tokens."""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from toolsense.utils.publish import load_published_json

PAIR = "stage1->stage2"
"""The pair of checkpoints whose drift these read."""


def drift_terms(path: str) -> dict | None:
    """The Stage-1 → Stage-2 input-embedding terms of a drift.json: the point drifts and its
    per-token rows (``d2`` / ``n2`` None when the file predates them); None without that pair."""
    d = load_published_json(path)
    pair = next((p for p in d.get("pairs", []) if f"{p['from']}->{p['to']}" == PAIR), None)
    if not pair:
        return None
    inp = pair["input"]
    rows = inp.get("rows")
    return {"virtual": inp["virtual"], "base": inp["base_vocab"], "d2": rows and np.asarray(rows["virtual"]["delta_sq"]),
            "n2": rows and np.asarray(rows["virtual"]["norm_sq"])}


def _group_draws(runs: list[dict], resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Per draw, the group's mean relative drift with every run's tokens resampled."""
    draws = np.zeros(resamples)
    for t in runs:
        idx = rng.integers(0, len(t["d2"]), (resamples, len(t["d2"])))
        draws += np.sqrt(t["d2"][idx].sum(1) / np.maximum(t["n2"][idx].sum(1), 1e-24))
    return draws / len(runs)


def drift_ratio_ci(flat: list[dict], hier: list[dict], resamples: int, seed: int = 0) -> dict:
    """Mean relative drift of the flat runs over that of the hierarchical runs, with a 95%
    interval from resampling each run's virtual tokens."""
    rng = np.random.default_rng(seed)
    f, h = _group_draws(flat, resamples, rng), _group_draws(hier, resamples, rng)
    value = statistics.mean(t["virtual"] for t in flat) / statistics.mean(t["virtual"] for t in hier)
    ok = h > 0
    lo, hi = np.quantile(f[ok] / h[ok], [0.025, 0.975]) if ok.any() else (None, None)
    return {"value": value, "lo": None if lo is None else float(lo), "hi": None if hi is None else float(hi)}


def drift_ratio_seeds(flat: list[dict], hier: list[dict]) -> dict:
    """The same ratio with two or more runs a side: its interval over *runs* (training seeds, each
    run's drift measured on all its tokens, so their token noise is inside the spread between runs):
    log(mean_flat / mean_hier) ± t_ν · se with se² = Σ_side s²(drifts) / (S · mean²) (the delta
    method) and ν by Welch–Satterthwaite; tokens shared across runs are not a level here."""
    from scipy.stats import t

    parts, means = [], []
    for side in (flat, hier):
        v = np.array([x["virtual"] for x in side], dtype=np.float64)
        means.append(float(v.mean()))
        parts.append((float(v.var(ddof=1) / (len(v) * v.mean() ** 2)), len(v) - 1.0))
    var = sum(p for p, _ in parts)
    spread = sum(p * p / df for p, df in parts)
    half = float(t.ppf(0.975, var * var / spread if spread > 0 else math.inf)) * math.sqrt(var)
    value = means[0] / means[1]
    return {"value": value, "lo": value * math.exp(-half), "hi": value * math.exp(half), "n_seeds": min(len(flat), len(hier)),
            "seeds": {"flat": len(flat), "hierarchical": len(hier)}, "one_seed": False,
            "method": "over runs: log ratio ± t·se (delta method, Welch df)"}


def drift_ratio_on_scale(terms: dict[str, list[dict]], scale: str, resamples: int) -> dict[str, Any] | None:
    """flat / hierarchical mean drift on ``scale``: over runs where both sides have two or more, else
    over one run's tokens (base drift a constant of each run), else the point alone."""
    if any(t is None for ts in terms.values() for t in ts):
        return None
    norm = scale == "drift_base_normalized"
    if min(map(len, terms.values())) >= 2:
        scaled = {sch: [{"virtual": t["virtual"] / t["base"] if norm else t["virtual"]} for t in ts]
                  for sch, ts in terms.items()}
        return drift_ratio_seeds(scaled["flat"], scaled["hierarchical"])
    base = {sch: statistics.mean(t["base"] for t in ts) for sch, ts in terms.items()}
    factor = base["hierarchical"] / base["flat"] if norm else 1.0
    if all(t["d2"] is not None for ts in terms.values() for t in ts):
        est = drift_ratio_ci(terms["flat"], terms["hierarchical"], resamples)
    else:
        est = {"value": statistics.mean(t["virtual"] for t in terms["flat"])
               / statistics.mean(t["virtual"] for t in terms["hierarchical"]), "lo": None, "hi": None}
    return {x: (v * factor if v is not None else None) for x, v in est.items()}
