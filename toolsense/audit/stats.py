"""AUROC with percentile-bootstrap CIs, overall and per partition (cluster)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score

UNDEFINED = "one class"
"""Why an AUROC is undefined (null in the files): its records hold one label only."""


def value(x: float | None) -> float:
    """A number read from a results file (null, an undefined AUROC, as NaN) for arithmetic."""
    return float("nan") if x is None else float(x)


def json_safe(obj):
    """``obj`` with every NaN float as None, for a file that must be valid JSON (a last guard: the
    AUROC dicts already say why they are undefined)."""
    if isinstance(obj, float) and np.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


@dataclass
class AUROC:
    auroc: float
    lo: float
    hi: float
    n: int

    def as_dict(self) -> dict:
        """JSON-ready (JSON has no NaN): an undefined value is null and ``undefined`` says why."""
        d = {k: None if isinstance(v, float) and np.isnan(v) else v for k, v in asdict(self).items()}
        if d["auroc"] is None:
            d["undefined"] = UNDEFINED
        elif d["lo"] is None:
            d["undefined"] = "interval: no bootstrap (n_boot=0) or no resample held both classes"
        return d

    def fmt(self) -> str:
        if np.isnan(self.auroc):
            return "n/a"
        return f"{self.auroc:.3f} [{self.lo:.3f}, {self.hi:.3f}]"


def _auroc_rows(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Mann-Whitney AUROC of each row of (y, s) (ties count one half); NaN where a row has
    one class only. Vectorised so 1000 bootstrap resamples cost one call."""
    ranks = rankdata(s, axis=1)
    pos = y.sum(axis=1)
    neg = y.shape[1] - pos
    with np.errstate(invalid="ignore", divide="ignore"):
        out = ((ranks * y).sum(axis=1) - pos * (pos + 1) / 2) / (pos * neg)
    out[(pos == 0) | (neg == 0)] = np.nan
    return out


def auroc_ci(y: Sequence[int], scores: Sequence[float], n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> AUROC:
    """Point AUROC (scikit-learn) and a percentile bootstrap CI over records."""
    y = np.asarray(y, dtype=int)
    s = np.asarray(scores, dtype=float)
    if len(set(y.tolist())) < 2:
        return AUROC(float("nan"), float("nan"), float("nan"), len(y))
    point = float(roc_auc_score(y, s))
    if n_boot <= 0:
        return AUROC(point, float("nan"), float("nan"), len(y))
    idx = np.random.default_rng(seed).integers(0, len(y), size=(n_boot, len(y)))
    boot = _auroc_rows(y[idx], s[idx])
    boot = boot[~np.isnan(boot)]
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha]) if len(boot) else (np.nan, np.nan)
    return AUROC(point, float(lo), float(hi), len(y))


def auroc_by_partition(y, scores, partitions, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> dict[str, AUROC]:
    """``{"all": ..., "<partition>": ...}``; a partition with one class gets NaN, not an error."""
    y, s, p = np.asarray(y), np.asarray(scores, dtype=float), np.asarray(partitions, dtype=object)
    out = {"all": auroc_ci(y, s, n_boot, level, seed)}
    for part in sorted(set(p.tolist()), key=str):
        m = p == part
        out[str(part)] = auroc_ci(y[m], s[m], n_boot, level, seed)
    return out


def paired_delta_ci(y, s_a, s_b, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> AUROC:
    """AUROC(s_b) - AUROC(s_a) on the same records, with a paired bootstrap CI."""
    y = np.asarray(y, dtype=int)
    a, b = np.asarray(s_a, dtype=float), np.asarray(s_b, dtype=float)
    if len(set(y.tolist())) < 2:
        return AUROC(float("nan"), float("nan"), float("nan"), len(y))
    point = float(roc_auc_score(y, b) - roc_auc_score(y, a))
    idx = np.random.default_rng(seed).integers(0, len(y), size=(n_boot, len(y)))
    d = _auroc_rows(y[idx], b[idx]) - _auroc_rows(y[idx], a[idx])
    d = d[~np.isnan(d)]
    alpha = (1 - level) / 2
    lo, hi = np.quantile(d, [alpha, 1 - alpha]) if len(d) else (np.nan, np.nan)
    return AUROC(point, float(lo), float(hi), len(y))
