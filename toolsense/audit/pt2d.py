"""Stage 1 - PT2D, per-tool TF-IDF decomposition.

For the full concatenated trace and for each tool's section alone, fit a class-balanced
logistic regression on TF-IDF n-grams of the fit partition and score the evaluation partition.
A tool whose AUROC exceeds the full trace's (gap A_tool - A_full > 0) holds label-predictive
text that the rest of the trace dilutes; its top-weighted n-grams are the evidence to read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Callable, Optional, Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from tqdm.auto import tqdm

from toolsense.audit.stats import auroc_by_partition, value
from toolsense.audit.traces import TraceSet
from toolsense.utils.config import NON_EMPTY
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.registry import Registry

FEATURES: Registry[Callable[..., TfidfVectorizer]] = Registry("PT2D feature set")


@FEATURES.register("word_1_2")
def _word(min_df: int = 1, max_features: Optional[int] = None) -> TfidfVectorizer:
    return TfidfVectorizer(analyzer="word", ngram_range=(1, 2), min_df=min_df, max_features=max_features, sublinear_tf=True)


@FEATURES.register("char_2_5")
def _char25(min_df: int = 1, max_features: Optional[int] = None) -> TfidfVectorizer:
    return TfidfVectorizer(analyzer="char", ngram_range=(2, 5), min_df=min_df, max_features=max_features, sublinear_tf=True)


@FEATURES.register("char_3_5")
def _char35(min_df: int = 1, max_features: Optional[int] = None) -> TfidfVectorizer:
    return TfidfVectorizer(analyzer="char", ngram_range=(3, 5), min_df=min_df, max_features=max_features, sublinear_tf=True)


@dataclass
class PT2DConfig:
    enabled: bool = True
    features: Annotated[list[str], NON_EMPTY] = field(default_factory=lambda: ["word_1_2", "char_2_5", "char_3_5"])
    """Feature sets (registry names) fit for every view."""
    C: float = 1.0
    """Inverse L2 strength of the logistic regression."""
    min_df: int = 1
    """Drop n-grams seen in fewer fit documents."""
    max_features: Optional[int] = None
    top_k: int = 10
    """Top-weighted n-grams reported per class, view and feature set."""

    def __post_init__(self) -> None:
        for f in self.features:
            FEATURES.get(f)
        if self.C <= 0:
            raise ValueError(f"pt2d.C must be > 0, got {self.C}")


def fit_score(texts: Sequence[str], y: np.ndarray, fit: np.ndarray, features: str, C: float = 1.0,
              min_df: int = 1, max_features: Optional[int] = None) -> tuple[np.ndarray, Pipeline]:
    """Fit TF-IDF + balanced LR on ``texts[fit]``; return decision scores for all texts."""
    pipe = Pipeline([
        ("tfidf", FEATURES.get(features)(min_df=min_df, max_features=max_features)),
        ("lr", LogisticRegression(C=C, class_weight="balanced", max_iter=2000, solver="liblinear")),
    ])
    texts = np.asarray(texts, dtype=object)
    pipe.fit(texts[fit], y[fit])
    return pipe.decision_function(texts), pipe


def top_ngrams(pipe: Pipeline, k: int) -> dict[str, list[list]]:
    """The k n-grams with the largest positive (label 1) and negative (label 0) weights."""
    names = pipe.named_steps["tfidf"].get_feature_names_out()
    coef = pipe.named_steps["lr"].coef_[0]
    order = np.argsort(coef)
    pos = [[str(names[i]), round(float(coef[i]), 4)] for i in order[::-1][:k] if coef[i] > 0]
    neg = [[str(names[i]), round(float(coef[i]), 4)] for i in order[:k] if coef[i] < 0]
    return {"label_1": pos, "label_0": neg}


def view_texts(traces: TraceSet, view: str) -> list[str]:
    """``full``: the concatenated trace; otherwise one tool's section ("" when absent)."""
    return traces.concatenated() if view == "full" else traces.sections(view)


def run_pt2d(traces: TraceSet, fit: np.ndarray, ev: np.ndarray, cfg: PT2DConfig, stats, out_path: Path) -> list[dict]:
    """One row per (view, feature set), appended to ``out_path`` (JSONL) as it is computed; rows
    already there are reused, so an interrupted run resumes."""
    store = JsonlStore(out_path, key=lambda r: (r["view"], r["features"]))
    y, parts = traces.labels, traces.partitions
    jobs = [(v, f) for v in ["full", *traces.tools] for f in cfg.features]
    rows = []
    for view, feats in tqdm(jobs, desc="PT2D", leave=False):
        if store.get((view, feats)) is not None:
            rows.append(store.get((view, feats)))
            continue
        texts = view_texts(traces, view)
        empty = float(np.mean([not t.strip() for t in np.asarray(texts, dtype=object)[ev]]))
        scores, pipe = fit_score(texts, y, fit, feats, cfg.C, cfg.min_df, cfg.max_features)
        res = auroc_by_partition(y[ev], scores[ev], parts[ev], stats.n_boot, stats.level, stats.seed)
        row = {"view": view, "features": feats, "auroc": {k: v.as_dict() for k, v in res.items()},
               "empty_fraction": empty, "top_ngrams": top_ngrams(pipe, cfg.top_k)}
        rows.append(store.append(row))
    full = {r["features"]: value(r["auroc"]["all"]["auroc"]) for r in rows if r["view"] == "full"}
    for r in rows:
        gap = value(r["auroc"]["all"]["auroc"]) - full[r["features"]]
        r["gap"] = None if np.isnan(gap) else gap  # undefined where either AUROC is (one class)
    return rows


def rank_tools(rows: list[dict]) -> list[str]:
    """Tools ordered by their best AUROC over feature sets, most predictive first."""
    best: dict[str, float] = {}
    for r in rows:
        if r["view"] != "full":
            a = value(r["auroc"]["all"]["auroc"])
            best[r["view"]] = max(best.get(r["view"], -1.0), -1.0 if np.isnan(a) else a)
    return sorted(best, key=lambda t: -best[t])
