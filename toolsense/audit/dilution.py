"""Dilution sweeps: how fast a localized signal fades as more trace text surrounds it.

(a) real - start from one tool's section and append the others in a given order;
(b) synthetic - insert K label-independent sections, each drawn from a pool of other tools'
sections (any record, regardless of label) and cut or tiled to the target section's word
length, at random positions; mean +- sd over seeds. Same TF-IDF + LR as PT2D."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from tqdm.auto import tqdm

from toolsense.audit.pt2d import FEATURES, PT2DConfig, fit_score
from toolsense.audit.stats import auroc_ci
from toolsense.audit.store import JsonlStore
from toolsense.audit.traces import TraceSet


@dataclass
class DilutionConfig:
    enabled: bool = True
    features: str = "char_3_5"
    """PT2D feature set used for both sweeps."""
    order: Optional[list[str]] = None
    """Real sweep order; None = tools ranked by PT2D AUROC, most predictive first."""
    tool: Optional[str] = None
    """Synthetic sweep target; None = the top PT2D tool."""
    ks: list[int] = field(default_factory=lambda: [0, 1, 2, 5, 10, 20])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4])

    def __post_init__(self) -> None:
        FEATURES.get(self.features)
        if any(k < 0 for k in self.ks):
            raise ValueError(f"dilution.ks must be >= 0, got {self.ks}")


def real_sweep(traces: TraceSet, fit: np.ndarray, ev: np.ndarray, order: Sequence[str], features: str,
               pt2d: PT2DConfig, stats, store: JsonlStore) -> list[dict]:
    """Row k: AUROC of the first k tools of ``order`` concatenated."""
    unknown = [t for t in order if t not in traces.tools]
    if unknown:
        raise ValueError(f"dilution.order names unknown tool(s) {unknown}; tools are {traces.tools}")
    y, rows = traces.labels, []
    for k in tqdm(range(1, len(order) + 1), desc="dilution (real)", leave=False):
        key = ("real", k, 0)
        if store.get(key) is None:
            scores, _ = fit_score(traces.concatenated(order[:k]), y, fit, features, pt2d.C, pt2d.min_df, pt2d.max_features)
            res = auroc_ci(y[ev], scores[ev], stats.n_boot, stats.level, stats.seed)
            store.add({"sweep": "real", "k": k, "seed": 0, "tools": list(order[:k]), **res.as_dict()})
        rows.append(store.get(key))
    return rows


def _matched(text: str, n_words: int) -> str:
    words = text.split()
    if n_words <= 0 or not words:
        return text
    reps = -(-n_words // len(words))
    return " ".join((words * reps)[:n_words])


def diluted_texts(traces: TraceSet, tool: str, k: int, rng: np.random.Generator) -> list[str]:
    """Per record: ``tool``'s section plus ``k`` length-matched pool sections, shuffled."""
    pool = [s for t in traces.tools if t != tool for s in traces.sections(t) if s.strip()]
    if k and not pool:
        raise ValueError(f"dilution: no non-empty sections of tools other than {tool!r} to draw from")
    out = []
    for target in traces.sections(tool):
        n = len(target.split())
        parts = [target] + [_matched(pool[i], n) for i in rng.integers(0, len(pool), size=k)]
        out.append("\n".join(parts[i] for i in rng.permutation(len(parts))))
    return out


def synthetic_sweep(traces: TraceSet, fit: np.ndarray, ev: np.ndarray, tool: str, ks: Sequence[int],
                    seeds: Sequence[int], features: str, pt2d: PT2DConfig, stats, store: JsonlStore) -> list[dict]:
    """One row per K: mean and sd of the eval AUROC over seeds (per-seed rows go to the store)."""
    if tool not in traces.tools:
        raise ValueError(f"dilution.tool={tool!r} is not a tool of the traces {traces.tools}")
    y, summary = traces.labels, []
    jobs = [(k, s) for k in ks for s in seeds]
    for k, seed in tqdm(jobs, desc="dilution (synthetic)", leave=False):
        if store.get(("synthetic", k, seed)) is None:
            texts = diluted_texts(traces, tool, k, np.random.default_rng(seed))
            scores, _ = fit_score(texts, y, fit, features, pt2d.C, pt2d.min_df, pt2d.max_features)
            res = auroc_ci(y[ev], scores[ev], n_boot=0)
            store.add({"sweep": "synthetic", "tool": tool, "k": k, "seed": seed, **res.as_dict()})
    for k in ks:
        vals = np.array([store.get(("synthetic", k, s))["auroc"] for s in seeds])
        summary.append({"k": k, "mean": float(vals.mean()), "sd": float(vals.std(ddof=1)) if len(vals) > 1 else 0.0,
                        "per_seed": vals.round(4).tolist()})
    return summary


def run_dilution(traces: TraceSet, fit, ev, cfg: DilutionConfig, pt2d: PT2DConfig, ranking: Sequence[str], stats,
                 out_path: Path) -> dict:
    store = JsonlStore(out_path, lambda r: (r["sweep"], r["k"], r["seed"]))
    order = list(cfg.order or ranking)
    tool = cfg.tool or order[0]
    return {"features": cfg.features, "order": order, "tool": tool,
            "real": real_sweep(traces, fit, ev, order, cfg.features, pt2d, stats, store),
            "synthetic": synthetic_sweep(traces, fit, ev, tool, cfg.ks, cfg.seeds, cfg.features, pt2d, stats, store)}
