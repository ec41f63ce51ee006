"""Finding 6: hierarchical virtual tokens drift less in Stage 2 than flat ones. The ratio of the
groups' mean relative drift gets an interval over runs where each side has two or more
(:func:`drift_ratio_seeds`), else from a bootstrap over tokens (each run's virtual rows redrawn
from the per-token terms drift.json holds, evaluation/drift.py: row_terms), marked one-seed."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np

from toolsense.study.sweep import Finding, Settings, Sweep, combine, seed_gate, verdict

DRIFT_RULE = ("sign rule on log(flat / hierarchical mean relative Stage-2 drift of the virtual rows), per tuning, with an "
              "interval over runs (seeds) where each side has two or more, else a bootstrap over tokens; untestable without "
              "per-token rows in drift.json for a side of one run, or when a group's virtual rows moved no more than the base "
              "vocabulary (a Stage 2 too short to separate them)")
PAIR, COL, DCOL = "stage1->stage2", "drift stage1->stage2 virtual", "drift stage1->stage2 Δcos"


def _terms(path: str) -> dict | None:
    """The Stage-1 → Stage-2 input-embedding terms of a drift.json: the point drifts and its
    per-token rows (``d2`` / ``n2`` None when the file predates them); None without that pair."""
    d = json.loads(Path(path).read_text(encoding="utf-8"))
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


def hierarchical_drift(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(6, "Hierarchical tokens drift less in Stage 2 than flat ones; their mutual cosine barely changes",
                "7–24× less drift; \\|Δcos\\| < 0.002")
    g = sw.get("grid")
    est, dcos, verdicts, why = {}, [], [], []
    for tun in ("lora", "full"):
        groups = {sch: [p for r in g.rows(tuning=tun, scheme=sch) for p in g.sources(r, COL).values()] if g else []
                  for sch in ("flat", "hierarchical")}
        if not groups["flat"] or not groups["hierarchical"]:
            continue
        dcos += [c["value"] for r in g.rows(tuning=tun, scheme="hierarchical") if (c := g.cell(r, DCOL)) and c.get("value") is not None]
        terms = {sch: [_terms(p) for p in paths] for sch, paths in groups.items()}
        seeded = all(t is not None and t["virtual"] > 0 for ts in terms.values() for t in ts) and min(map(len, terms.values())) >= 2
        if not seeded and any(t is None or t["d2"] is None for ts in terms.values() for t in ts):
            flat_v = statistics.mean(c["value"] for r in g.rows(tuning=tun, scheme="flat") if (c := g.cell(r, COL)))
            hier_v = statistics.mean(c["value"] for r in g.rows(tuning=tun, scheme="hierarchical") if (c := g.cell(r, COL)))
            est[tun] = {"value": flat_v / hier_v if hier_v else None, "lo": None, "hi": None}
            verdicts.append("untestable")
            why.append(f"{tun}: drift.json holds no per-token rows (written before they were recorded; rerun "
                       "evaluate.py task=drift), so the ratio has no interval")
            continue
        still = [sch for sch, ts in terms.items() if statistics.mean(t["virtual"] for t in ts) <= statistics.mean(t["base"] for t in ts)]
        if seeded:
            est[tun] = drift_ratio_seeds(terms["flat"], terms["hierarchical"])
        else:  # a side of one run: its tokens are all there is to resample
            est[tun] = {**drift_ratio_ci(terms["flat"], terms["hierarchical"], s.resamples), "one_seed": True,
                        "method": "over tokens alone (a side of one run)"}
        if still:
            verdicts.append("untestable")
            why.append(f"{tun}: the {' and '.join(still)} virtual rows moved no more than the base vocabulary — Stage 2 too "
                       "short to separate the token kinds")
            continue
        log = {k: (math.log(v) if (v := est[tun].get(k)) and v > 0 else None) for k in ("value", "lo", "hi")}
        verdicts.append(verdict(log))
    if not est:
        f.why = "needs drift of flat and hierarchical runs (evaluate.drift=true)"
        return f

    def fmt(e: dict) -> str:
        ci = f" [{e['lo']:.1f}, {e['hi']:.1f}]" if e.get("lo") is not None else " (no interval)"
        return ("—" if e.get("value") is None else f"{e['value']:.1f}×") + ci

    f.ours = (", ".join(f"{t}: flat drift {fmt(e)} hierarchical" for t, e in est.items())
              + (f"; hierarchical max \\|Δcos\\| {max(abs(x) for x in dcos):.4f}" if dcos else ""))
    f.verdict = combine(verdicts)
    f.why = "; ".join(why)
    f.details = {"ratio_flat_over_hierarchical": est, "dcos_hierarchical": dcos, "verdicts": verdicts,
                 "rule": DRIFT_RULE}
    return seed_gate(f, {r: len(g.sources(r, COL)) for r in g.rows() if g.sources(r, COL)}, s.min_seeds)
