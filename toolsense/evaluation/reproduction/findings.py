"""The paper's seven findings, each computed from a study's sweeps (sweep.Sweep): ``grid`` (the
configurations × tunings × seeds of one model) and, for finding 7, ``appendix_e``. A finding
whose configurations are absent from the sweep is returned as n/a with the reason."""

from __future__ import annotations

import statistics
from typing import Any

from toolsense.evaluation.reproduction.sweep import Finding, Sweep, paired, pct, verdict
from toolsense.evaluation.stats import cohens_d


def _vals(sweep: Sweep, rows: list[str], col: str) -> list[float]:
    return [c["value"] for r in rows if (c := sweep.cell(r, col)) and c.get("value") is not None]


def _range(xs: list[float], scale: float = 100.0, unit: str = "%", d: int = 1) -> str:
    if not xs:
        return "—"
    lo, hi = min(xs) * scale, max(xs) * scale
    return f"{lo:.{d}f}{unit}" if abs(hi - lo) < 10 ** -d else f"{lo:.{d}f}–{hi:.{d}f}{unit}"


def stage2_lift(sw: dict[str, Sweep], k: int, resamples: int) -> Finding:
    f = Finding(1, "Stage 2 lifts verbose-query recall far more than realistic-query recall",
                "G1 Rc 90–96% after Stage 2; RRB gains 2–18 pp")
    g = sw.get("grid")
    rows = g.rows() if g else []
    if not rows:
        f.why = "no Stage-2 rows"
        return f
    lifts = {b: paired([(g, f"{r}:stage1", g, r) for r in rows], f"{b} Rc@{k}", f"Rc@{k}", resamples) for b in ("standard", "realistic")}
    if not all(lifts.values()):
        f.why = "no Stage-1 evaluations of the same runs (evaluate.stages=[stage1,stage2])"
        return f
    std, real = lifts["standard"], lifts["realistic"]
    f.ours = (f"standard Rc@{k} after Stage 2 {_range(_vals(g, rows, f'standard Rc@{k}'))}; Stage-2 gain standard "
              f"{pct(std, True)}, realistic {pct(real, True)} (pooled over {len(rows)} configurations × seeds)")
    diff = {"value": std["value"] - real["value"], "lo": std["lo"] - real["hi"], "hi": std["hi"] - real["lo"]}
    f.verdict = verdict(diff)
    f.details = {"lift_standard": std, "lift_realistic": real, "per_configuration": {
        r: {b: (g.cell(r, f"{b} Rc@{k}") or {}).get("value") for b in ("standard", "realistic")} for r in rows}}
    return f


def realistic_collapse(sw: dict[str, Sweep], k: int, resamples: int) -> Finding:
    f = Finding(2, "Realistic queries collapse against verbose ones; the dense baseline beats the best parametric model on realistic queries",
                "TG-3FM 44.4% vs te3l 55.6% (BM25 32.4%) on the RRB")
    g = sw.get("grid")
    rows = g.rows() if g else []
    dense, bm25 = (g.baseline("dense"), g.baseline("bm25")) if g else (None, None)
    if not rows or not dense:
        f.why = "no Stage-2 rows or no dense baseline"
        return f
    col = f"realistic Rc@{k}"
    best = max(rows, key=lambda r: (g.cell(r, col) or {}).get("value") or -1)
    std_mean = statistics.mean(_vals(g, rows, f"standard Rc@{k}"))
    real_mean = statistics.mean(_vals(g, rows, col))
    d_cell, b_cell, best_cell = g.cell(dense, col), g.cell(bm25, col) if bm25 else None, g.cell(best, col)
    f.ours = (f"Rc@{k} mean over configurations: standard {100 * std_mean:.1f}% → realistic {100 * real_mean:.1f}%; best parametric "
              f"({best}) {pct(best_cell)} vs dense (MiniLM) {pct(d_cell)}, BM25 {pct(b_cell)}")
    margin = {"value": d_cell["value"] - best_cell["value"],
              "lo": (d_cell.get("lo") or d_cell["value"]) - (best_cell.get("hi") or best_cell["value"]),
              "hi": (d_cell.get("hi") or d_cell["value"]) - (best_cell.get("lo") or best_cell["value"])}
    collapsed = real_mean < std_mean
    f.verdict = verdict(margin) if collapsed else "no"
    if not collapsed:
        f.why = "realistic recall is not below standard recall on average over the configurations"
    f.details = {"dense_minus_best": margin, "best": best, "standard_mean": std_mean, "realistic_mean": real_mean}
    return f


def flat_vs_hierarchical_is(sw: dict[str, Sweep], k: int, resamples: int) -> Finding:
    f = Finding(3, "Flat configurations keep a higher Internalization Score on realistic queries than hierarchical ones",
                "IS 0.75–0.85 flat vs 0.33–0.79 hierarchical; Cohen's d = 1.45")
    g = sw.get("grid")
    col = f"realistic IS@{k}"
    flat = _vals(g, g.rows(scheme="flat"), col) if g else []
    hier = _vals(g, g.rows(scheme="hierarchical"), col) if g else []
    if len(flat) < 2 or len(hier) < 2:
        f.why = "needs ≥ 2 flat and ≥ 2 hierarchical configurations"
        return f
    d = cohens_d(flat, hier)
    f.ours = f"IS@{k} {_range(flat, 1, '', 2)} flat vs {_range(hier, 1, '', 2)} hierarchical; d = {d:.2f} (n = {len(flat)} + {len(hier)} configurations)"
    f.verdict = "no" if d <= 0 else ("yes" if d >= 0.8 else "direction only")
    f.details = {"flat": flat, "hierarchical": hier, "d": d, "rule": "yes when d >= 0.8 (large), direction only when 0 < d < 0.8"}
    return f


DEBIASED_COL = {"mcq": ("bal", "balanced_accuracy"), "qa": ("calib", "calibrated_accuracy")}
"""A probe's debiased token column and its per-item metric: what findings 4 and 5 are judged on
where the run has it, since a one-letter (or one-word) answerer's raw accuracy is the share of
gold answers at its favourite slot, below or above chance by the label mix alone."""


def _probe(g: Sweep, row: str, bench: str, mode: str) -> dict[str, Any]:
    """A probe cell and its debiased one: MCQ position-balanced (else circular) accuracy, QA calibrated."""
    deb = g.cell(row, f"{bench} {mode} {DEBIASED_COL[bench][0]}")
    if deb is None and bench == "mcq":
        deb = g.cell(row, f"mcq {mode} circ")
    return {"acc": g.cell(row, f"{bench} {mode} acc"), "debiased": deb}


def _ceiling_above_chance(g: Sweep, row: str, bench: str) -> bool:
    """Whether card mode (the tool's description in the prompt) answers above chance, raw or
    debiased (a letter prior can hide what the model read: the balanced score shows it)."""
    card = _probe(g, row, bench, "card")
    chance = (card["acc"] or {}).get("chance", 0.25 if bench == "mcq" else 0.5)
    return any(e and e.get("lo") is not None and e["lo"] > chance for e in (card["acc"], card["debiased"]))


def _near(est: dict | None, chance: float) -> bool | None:
    if not est or est.get("lo") is None:
        return None
    return est["lo"] <= chance <= est["hi"]


def probes_near_chance(sw: dict[str, Sweep], k: int, resamples: int) -> Finding:
    f = Finding(4, "Factual probes from the virtual token stay near chance after retrieval training",
                "TG: MCQ 31.4%, QA 50.0%")
    g = sw.get("grid")
    rows = g.rows(experiment="tg") if g else []
    if not rows or not g.cell(rows[0], "mcq token acc"):
        f.why = "no TG probe results"
        return f
    parts, near, ceiling_ok, judged_on = [], [], [], []
    for row in rows:
        for bench in ("mcq", "qa"):
            tok, card = _probe(g, row, bench, "token"), _probe(g, row, bench, "card")
            judged = tok["debiased"] if tok["debiased"] and tok["debiased"].get("lo") is not None else tok["acc"]
            near.append(_near(judged, tok["acc"]["chance"]))
            judged_on.append("debiased" if judged is tok["debiased"] else "raw")
            ceiling_ok.append(_ceiling_above_chance(g, row, bench))
            deb = ("balanced" if g.cell(row, "mcq token bal") else "circular") if bench == "mcq" else "calibrated"
            parts.append(f"{row} {bench.upper()} {pct(tok['acc'])} (chance {100 * tok['acc']['chance']:.0f}, {deb} "
                         f"{pct(tok['debiased'])}; card ceiling {pct(card['acc'])}, debiased {pct(card['debiased'])})")
    f.ours = "; ".join(parts)
    if not any(ceiling_ok):
        f.verdict = "untestable"
        f.why = "the card ceiling is at chance too: with the tool's description in the prompt the model still cannot answer"
    else:
        f.verdict = "yes" if all(n is not False for n in near) else "no"
    f.details = {"near_chance": near, "judged_on": judged_on, "ceiling_above_chance": ceiling_ok,
                 "rule": "yes when every TG token score's 95% interval holds chance: the debiased score "
                         "(MCQ position-balanced, QA calibrated) where the run has one, else the raw accuracy"}
    return f


def formats_and_lora_retain(sw: dict[str, Sweep], k: int, resamples: int) -> Finding:
    f = Finding(5, "Multi-format memorization (TG-3FM) retains more probe knowledge than TG; LoRA more than FFT",
                "41.7% vs 29.8%")
    g = sw.get("grid")
    if not g or not g.comp:
        f.why = "no results"
        return f
    fmt = [(g, a, g, b) for t in ("lora", "full") for a in g.rows("tg", t) for b in g.rows("tg_3fm", t)]
    tun = [(g, a, g, b) for e in ("tg", "tg_h", "tg_3fm", "tg_5fm") for a in g.rows(e, "full") for b in g.rows(e, "lora")]
    short, metric = DEBIASED_COL["mcq"]
    debiased = all(g.cell(r, f"mcq token {short}") for r in g.rows() if g.cell(r, "mcq token acc"))
    col, metric, what = (f"mcq token {short}", metric, "position-balanced") if debiased else ("mcq token acc", "accuracy", "raw")
    est = {name: paired(pairs, col, metric, resamples) for name, pairs in (("formats", fmt), ("tuning", tun))}
    if not any(est.values()):
        f.why = "needs TG and TG-3FM, or LoRA and FFT, with probe results"
        return f
    raw = {name: paired(pairs, "mcq token acc", "accuracy", resamples) for name, pairs in (("formats", fmt), ("tuning", tun))} \
        if debiased else est
    f.ours = (f"MCQ token accuracy after Stage 2, {what}: TG-3FM − TG {pct(est['formats'], True)}; LoRA − FFT "
              f"{pct(est['tuning'], True)}" + (f" (raw: {pct(raw['formats'], True)}; {pct(raw['tuning'], True)})" if debiased else "")
              + " (paired over probe items and seeds)")
    verdicts = [verdict(e) for e in est.values() if e]
    f.verdict = "yes" if all(v == "yes" for v in verdicts) else ("no" if "no" in verdicts else "direction only")
    # a difference says something only between two runs that can answer from the card at all
    compared = [(a, b) for _, a, _, b in fmt + tun if g.cell(a, "mcq card acc") and g.cell(b, "mcq card acc")]
    ceiling = {r: _ceiling_above_chance(g, r, "mcq") for pair in compared for r in pair}
    if compared and not any(ceiling[a] and ceiling[b] for a, b in compared):
        at_chance = sorted(r for r, ok in ceiling.items() if not ok)
        which = f"all {len(at_chance)} runs" if len(at_chance) == len(ceiling) else ", ".join(at_chance)
        f.verdict, f.why = "untestable", (f"no compared pair has both runs' card ceiling above chance (at chance: {which}): "
                                          "differences between runs that cannot answer carry no knowledge")
    f.details = {**est, "judged_on": what, "raw": raw, "ceiling_above_chance": ceiling}
    return f


def hierarchical_drift(sw: dict[str, Sweep], k: int, resamples: int) -> Finding:
    f = Finding(6, "Hierarchical tokens drift less in Stage 2 than flat ones; their mutual cosine barely changes",
                "7–24× less drift; |Δcos| < 0.002")
    g = sw.get("grid")
    col, dcol = "drift stage1->stage2 virtual", "drift stage1->stage2 Δcos"
    ratios, dcos = {}, []
    for tun in ("lora", "full"):
        flat, hier = _vals(g, g.rows(tuning=tun, scheme="flat"), col) if g else [], _vals(g, g.rows(tuning=tun, scheme="hierarchical"), col) if g else []
        if flat and hier and statistics.mean(hier) > 0:
            ratios[tun] = statistics.mean(flat) / statistics.mean(hier)
        dcos += _vals(g, g.rows(tuning=tun, scheme="hierarchical"), dcol) if g else []
    if not ratios:
        f.why = "needs drift of flat and hierarchical runs (evaluate.drift=true)"
        return f
    f.ours = (", ".join(f"{t}: flat drift {r:.1f}× hierarchical" for t, r in ratios.items())
              + (f"; hierarchical max |Δcos| {max(abs(x) for x in dcos):.4f}" if dcos else ""))
    f.verdict = "no" if any(r <= 1 for r in ratios.values()) else ("yes" if all(r >= 7 for r in ratios.values()) else "direction only")
    f.details = {"ratio_flat_over_hierarchical": ratios, "dcos_hierarchical": dcos,
                 "rule": "yes when flat drifts >= 7x more (the paper's lower end), direction only when > 1x"}
    return f


def appendix_e(sw: dict[str, Sweep], k: int, resamples: int) -> Finding:
    f = Finding(7, "Stage 2 on realistic queries (App. E) restores realistic recall and costs verbose recall",
                "realistic recall restored; verbose recall drops")
    g, e = sw.get("grid"), sw.get("appendix_e")
    if not g or not e or not e.rows():
        f.why = "no appendix_e sweep"
        return f
    pairs = [(g, a, e, b) for b in e.rows() for a in g.rows(experiment="tg", tuning=b.rpartition("-")[2])]
    real = paired(pairs, f"realistic Rc@{k}", f"Rc@{k}", resamples)
    std = paired(pairs, f"standard Rc@{k}", f"Rc@{k}", resamples)
    if not real or not std:
        f.why = "no TG run of the grid with the same tuning and seeds"
        return f
    f.ours = f"TG trained on realistic − TG: realistic Rc@{k} {pct(real, True)}, standard Rc@{k} {pct(std, True)}"
    verdicts = [verdict(real), verdict(std, expect_positive=False)]
    f.verdict = "yes" if all(v == "yes" for v in verdicts) else ("no" if "no" in verdicts else "direction only")
    f.details = {"realistic_gain": real, "standard_change": std}
    return f


FINDINGS = [stage2_lift, realistic_collapse, flat_vs_hierarchical_is, probes_near_chance,
            formats_and_lora_retain, hierarchical_drift, appendix_e]
"""In the paper's order."""
