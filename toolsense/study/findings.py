"""The paper's seven findings, each computed from a study's sweeps (sweep.Sweep): ``grid`` (the
configurations × tunings × seeds of one model) and, for finding 7, ``appendix_e``. A finding
whose configurations are absent from the sweep is returned as n/a with the reason. Every
difference is paired per item, and per seed where both arms hold the same seeds, with an interval
over seeds and items (sweep.arms_diff / arms_contrast / arms_gain: seed_stats.py; over items alone
where every arm has one seed, marked); every verdict follows sweep.verdict / near_chance, and
``details["rule"]`` says which — and none rests on an arm of fewer than ``min_seeds`` seeds
(sweep.seed_gate: "not enough seeds")."""

from __future__ import annotations

from dataclasses import replace

from toolsense.comparison.cell_stats import EFFECT_UNIT, effect_size
from toolsense.comparison.runs import item_values
from toolsense.evaluation.coverage import item_coverage
from toolsense.reporting.tables import pct, value_range
from toolsense.study.drift_finding import DRIFT_RULE, hierarchical_drift
from toolsense.study.probe_findings import PROBE_RULE, RETAIN_RULE, formats_and_lora_retain, probes_near_chance
from toolsense.study.sweep import (
    Arms,
    Finding,
    Settings,
    Sweep,
    arms_contrast,
    arms_diff,
    arms_gain,
    below_floor,
    conjunction,
    seed_arms,
    seed_gate,
    verdict,
)

RULES = {
    1: "sign rule on the difference of the two Stage-2 gains (standard − realistic), on the scale the plan registers (below; "
       "else normalized): in pp, Stage 2 − Stage 1 Rc@k; normalized, the share of the queries Stage 1 missed that Stage 2 "
       "recovered, net of those it lost (Σ(Stage 2 − Stage 1) / Σ(1 − Stage 1)); each over a configuration's queries and seeds "
       "(the same runs' Stage-1 and Stage-2 evaluations), averaged over configurations, the interval over seeds and queries, "
       "the other scale shown beside it; configurations: the plan's arms for the finding (else all), none below the "
       "retrieval floor (constrained standard Rc@k after Stage 2; named, not averaged in). study=tools revised its rule "
       "from pp to normalized on 2026-12-03, before its TG "
       "seed-1 run was evaluated, because a ceiling bounds a gain in pp (a side Stage 1 takes near 100% gains only its headroom)",
    2: "both parts by the sign rule: the collapse (standard − realistic Rc@k over configurations, over seeds and queries) "
       "and dense − best parametric run on realistic Rc@k (paired per query); the collapse's verdict where it is not yes; "
       "configurations as in finding 1 (the plan's arms, none below the retrieval floor)",
    3: f"sign rule on Cohen's d of realistic IS@k, flat − hierarchical, over {EFFECT_UNIT}, with a bootstrap interval over "
       "configurations, beside the smallest d it detects with 80% power; where a group keeps fewer than 2 configurations with at least "
       "`min_hits` constrained hits, the sign rule on flat − hierarchical IS of those runs (a normal interval from each cell's "
       "own, over its queries and seeds) with the minimum detectable difference at 80% power; untestable only where a group "
       "keeps none",
    4: PROBE_RULE,
    5: RETAIN_RULE,
    6: DRIFT_RULE,
    7: "sign rule on App. E − TG Rc@k (realistic: up; standard: down), paired per query and seed, on the test items whose "
       "gold tool both runs' Stage 2 trained on (coverage shown beside); yes when both parts are yes",
}
"""How each finding is judged (the report's header lists them); the sign and equivalence rules
are sweep.VERDICT_RULE and sweep.EQUIVALENCE_RULE."""


def finding_rows(g: Sweep, n: int, s: Settings) -> tuple[list[str], list[str]]:
    """The Stage-2 rows that enter finding ``n`` (the plan's arms for it, else every row) and, second, those of
    them left out for not retrieving: constrained standard Rc@k below ``s.retrieval_floor`` (reported, not averaged in)."""
    rows = [r for r in g.rows() if not s.arms.get(n) or r in s.arms[n]]
    below = below_floor(g, rows, s.retrieval_floor, s.k)
    return [r for r in rows if r not in below], below


def _left_out(g: Sweep, below: list[str], s: Settings) -> str:
    return "; ".join(f"left out: {r} (standard Rc@{s.k} {pct(g.cell(r, f'standard Rc@{s.k}'))} below the retrieval floor "
                     f"{100 * s.retrieval_floor:.0f}%: it does not retrieve; reported, not averaged in)" for r in below)


def _floor_only(f: Finding, g: Sweep, below: list[str], s: Settings) -> Finding:
    f.verdict, f.why = "untestable", "every configuration it compares is below the retrieval floor"
    f.ours = _left_out(g, below, s)
    return f


def _vals(sweep: Sweep, rows: list[str], col: str) -> list[float]:
    return [c["value"] for r in rows if (c := sweep.cell(r, col)) and c.get("value") is not None]


def stage2_lift(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(1, "Stage 2 lifts verbose-query recall far more than realistic-query recall",
                "G1 Rc 90–96% after Stage 2; RRB gains 2–18 pp")
    g, k = sw.get("grid"), s.k
    rows, below = finding_rows(g, 1, s) if g else ([], [])
    if not rows:
        return _floor_only(f, g, below, s) if below else replace(f, why="no Stage-2 rows")
    benches = ("standard", "realistic")
    arms = {b: {name.partition(":stage1")[0]: v for name, v in seed_arms([(g, f"{r}:stage1", g, r) for r in rows],
                                                                            f"{b} Rc@{k}", f"Rc@{k}", same_runs=True).items()}
            for b in benches}
    if not all(arms.values()):
        f.why = "no Stage-1 evaluations of the same runs (evaluate.stages=[stage1,stage2])"
        return f
    std, real = (arms_diff(arms[b], s.resamples) for b in benches)
    diff = arms_contrast(arms["standard"], arms["realistic"], s.resamples)
    norm = arms_gain(arms["standard"], arms["realistic"], s.resamples)
    unit, runs = _per_run_gains(arms, s.resamples)
    f.ours = (f"Stage-2 gain as the share of Stage 1's misses recovered (net): standard {pct(norm and norm['first'])}, "
              f"realistic {pct(norm and norm['second'])}, difference {pct(norm, True)} (mean over {len(rows)} "
              f"configurations; per {unit}: {runs or '—'}); in pp: standard {pct(std, True)}, realistic {pct(real, True)}, "
              f"difference {pct(diff, True)} (standard Rc@{k} after Stage 2 {value_range(_vals(g, rows, f'standard Rc@{k}'))}; "
              f"paired per query and run; {_seeds_text(norm)})")
    f.verdict = verdict(diff if s.gain_scale == "pp" else norm)
    f.ours += f"; the verdict rests on the difference {'in pp' if s.gain_scale == 'pp' else 'of the normalized gains'}"
    f.ours += f"; {_left_out(g, below, s)}" if below else ""
    f.details = {"lift_standard": std, "lift_realistic": real, "lift_difference": diff, "normalized_gain": norm,
                 f"per_{unit}": runs, "absolute_rule_verdict": verdict(diff), "rule": RULES[1],
                 "per_configuration": {r: {b: (g.cell(r, f"{b} Rc@{k}") or {}).get("value") for b in benches} for r in rows + below},
                 "below_floor": below}
    return seed_gate(f, {r: len(a) for r, (a, _) in arms["standard"].items()}, s.min_seeds)


def _seeds_text(est: dict | None) -> str:
    """How an estimate treats seeds, for a finding's prose."""
    if not est:
        return "—"
    if est.get("one_seed") and "seeds" not in est:
        return "one seed per configuration: intervals over queries alone"
    seeds = est.get("seeds") or {}
    return (f"intervals over seeds and queries ({', '.join(f'{g}: {n}' for g, n in seeds.items())} seeds)"
            + ("; an arm of one seed counts by its queries alone" if est.get("one_seed") else ""))


def _per_run_gains(arms: dict[str, Arms], resamples: int, most: int = 4) -> tuple[str, str]:
    """("run", each run's normalized-gain difference (standard − realistic) with its interval, as
    ``row sN +x.x pp [lo, hi]``), or with more than ``most`` runs ("configuration", each
    configuration's over its seeds); ``arms``: bench -> row -> (Stage-1 runs, Stage-2 runs) by seed."""
    std, real = arms["standard"], arms["realistic"]
    runs = [(f"{r} s{seed}", r, [seed]) for r in std if r in real for seed in sorted(std[r][0]) if seed in real[r][0]]
    units = runs if len(runs) <= most else [(r, r, sorted(std[r][0])) for r in std if r in real]

    def part(side: Arms, r: str, seeds: list) -> Arms:
        return {r: tuple({x: side[r][i][x] for x in seeds if x in side[r][i]} for i in (0, 1))}

    ests = [(name, arms_gain(part(std, r, seeds), part(real, r, seeds), resamples)) for name, r, seeds in units]
    return ("run" if units is runs else "configuration"), ", ".join(f"{name} {pct(est, True)}" for name, est in ests if est)


def _runs(g: Sweep, row: str, col: str, metric: str) -> dict[int, dict]:
    """A row's runs in a column: ``trainer.seed -> item id -> value`` (runs without samples left out)."""
    return {seed: v for seed, p in g.sources(row, col).items() if (v := item_values(p, metric)) is not None}


def realistic_collapse(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(2, "Realistic queries collapse against verbose ones; "
                "the dense baseline beats the best parametric model on realistic queries",
                "TG-3FM 44.4% vs te3l 55.6% (BM25 32.4%) on the RRB")
    g, k = sw.get("grid"), s.k
    rows, below = finding_rows(g, 2, s) if g else ([], [])
    dense, bm25 = (g.baseline("dense"), g.baseline("bm25")) if g else (None, None)
    if not rows and below and dense:
        return _floor_only(f, g, below, s)
    if not rows or not dense:
        f.why = "no Stage-2 rows or no dense baseline"
        return f
    col, metric = f"realistic Rc@{k}", f"Rc@{k}"
    best = max(rows, key=lambda r: (g.cell(r, col) or {}).get("value") or -1)
    d_path = next(iter(g.sources(dense, col).values()), None)
    d_items = item_values(d_path, metric) if d_path else None
    # a mean as a "difference from 0": each run of a row against zeros on its own items (the same seeds: paired)
    per = {b: {r: ({x: {i: 0.0 for i in v} for x, v in runs.items()}, runs) for r in rows if (runs := _runs(g, r, f"{b} Rc@{k}", metric))}
           for b in ("standard", "realistic")}
    collapse = arms_contrast(per["standard"], per["realistic"], s.resamples)
    best_runs = _runs(g, best, col, metric)
    # dense − best: the deterministic baseline stands beside every run of the best row (one seed draw moves both)
    margin = arms_diff({best: (best_runs, {x: d_items for x in best_runs})}, s.resamples) if d_items and best_runs else None
    d_cell, b_cell, best_cell = g.cell(dense, col), g.cell(bm25, col) if bm25 else None, g.cell(best, col)
    f.ours = (f"Rc@{k} over configurations: standard − realistic {pct(collapse, True)}; best parametric ({best}) {pct(best_cell)} "
              f"vs dense (MiniLM) {pct(d_cell)}, BM25 {pct(b_cell)}; dense − best {pct(margin, True)} (paired per query; "
              f"{_seeds_text(collapse)})" + (f"; {_left_out(g, below, s)}" if below else ""))
    parts = [verdict(collapse), verdict(margin)]
    f.verdict = parts[0] if parts[0] != "yes" else parts[1]
    if parts[0] != "yes":
        f.why = f"the collapse itself is {parts[0]}: realistic recall is not clearly below standard recall"
    f.details = {"collapse": collapse, "dense_minus_best": margin, "best": best, "verdicts": parts, "rule": RULES[2],
                 "below_floor": below}
    return seed_gate(f, {r: len(a) for r, (a, _) in per["realistic"].items()}, s.min_seeds)


def flat_vs_hierarchical_is(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(3, "Flat configurations keep a higher Internalization Score on realistic queries than hierarchical ones",
                "IS 0.75–0.85 flat vs 0.33–0.79 hierarchical; Cohen's d = 1.45")
    g, k = sw.get("grid"), s.k
    col = f"realistic IS@{k}"
    rows = g.rows() if g else []
    schemes = {r: g.comp["schemes"].get(r) for r in rows if g.comp["schemes"].get(r) in ("flat", "hierarchical")} if g else {}
    if not all(sum(v == sc for v in schemes.values()) for sc in ("flat", "hierarchical")):
        f.why = "needs a flat and a hierarchical configuration"
        return f
    d = effect_size(g.comp["cells"], schemes, [col], f"IS@{k}", s.resamples)
    flat, hier = d["flat"], d["hierarchical"]
    f.details = {**d, "rule": RULES[3]}
    gate = {r: (g.cell(r, col) or {}).get("n_seeds") or 1 for r in schemes}
    if not flat or not hier:
        f.verdict = "untestable"
        f.why = (f"a group has no configuration whose IS rests on ≥ {s.min_hits} constrained hits ({len(flat)} flat, "
                 f"{len(hier)} hierarchical; left out: {'; '.join(d['excluded']) or 'none'})")
        f.ours = f"IS@{k} {value_range(flat, 1, '', 2)} flat vs {value_range(hier, 1, '', 2)} hierarchical (usable configurations)"
        return f
    if len(flat) < 2 or len(hier) < 2 or d.get("d") is None:  # no d over configurations: the runs' own difference
        diff = is_difference(g, schemes, col, s.min_hits)
        f.details.update(difference=diff, power=diff["power"])
        f.ours = (f"IS@{k} flat − hierarchical {diff['value']:+.2f} [{diff['lo']:.2f}, {diff['hi']:.2f}] ({diff['text']}); "
                  f"it points {'the paper’s way' if diff['value'] > 0 else 'the other way'}; {diff['power']['text']}")
        f.verdict = verdict(diff)
        f.why = (f"{len(flat)} flat and {len(hier)} hierarchical configuration(s) with ≥ {s.min_hits} hits: no Cohen's d over "
                 "configurations; the interval covers the queries of these runs only, not other configurations")
        return seed_gate(f, gate, s.min_seeds)
    ci = f" [{d['lo']:.2f}, {d['hi']:.2f}]" if d.get("lo") is not None else ""
    power = d_power(len(flat), len(hier))
    f.details["power"] = power
    f.ours = (f"IS@{k} {value_range(flat, 1, '', 2)} flat vs {value_range(hier, 1, '', 2)} hierarchical; d = {d['d']:.2f}{ci} "
              f"(n = {len(flat)} + {len(hier)} configurations" + (f"; {len(d['excluded'])} few-hit IS left out" if d["excluded"] else "")
              + f"; {power['text']})")
    f.verdict = verdict({"value": d["d"], "lo": d.get("lo"), "hi": d.get("hi")})
    return seed_gate(f, gate, s.min_seeds)


Z_975, Z_80 = 1.959964, 0.841621
"""Normal quantiles of a two-sided 5% test and of 80% power: the minimum detectable difference is
(z_.975 + z_.80) standard errors."""


def d_power(n_flat: int, n_hier: int) -> dict:
    """The smallest Cohen's d a two-sided 5% test over ``n_flat`` + ``n_hier`` configurations detects
    with 80% power (normal approximation: (z_.975 + z_.80) · sqrt(1/n1 + 1/n2))."""
    mdd = (Z_975 + Z_80) * (1 / n_flat + 1 / n_hier) ** 0.5
    return {"mdd": mdd, "scale": "d", "text": f"80% power only for |d| ≥ {mdd:.2f} at these n (the paper's d = 1.45)"}


def is_difference(g: Sweep, schemes: dict[str, str], col: str, min_hits: int) -> dict:
    """Flat − hierarchical IS between the configurations whose IS rests on ≥ ``min_hits`` constrained
    hits (each group's mean), with a normal interval whose standard error comes from each cell's own
    95% interval ((hi − lo) / 2z, over its queries and seeds), and its power: the minimum detectable
    difference at 80% power, (z_.975 + z_.80) · se."""
    groups: dict[str, list[tuple[float, float, int, str]]] = {"flat": [], "hierarchical": []}
    for r, sc in sorted(schemes.items()):
        c = g.cell(r, col) or {}
        if c.get("value") is None or c.get("few_hits") or (c.get("hits") is not None and c["hits"] < min_hits):
            continue
        se = (c["hi"] - c["lo"]) / (2 * Z_975) if c.get("lo") is not None and c.get("hi") is not None else float("nan")
        groups[sc].append((c["value"], se, c.get("hits") or 0, r))
    mean = {sc: sum(x[0] for x in v) / len(v) for sc, v in groups.items()}
    var = {sc: sum(x[1] ** 2 for x in v) / len(v) ** 2 for sc, v in groups.items()}
    value, se = mean["flat"] - mean["hierarchical"], (var["flat"] + var["hierarchical"]) ** 0.5
    mdd = (Z_975 + Z_80) * se
    text = "; ".join(f"{sc} {', '.join(f'{r} {v:.2f} on {h} hits' for v, _, h, r in xs)}" for sc, xs in groups.items())
    return {"value": value, "lo": value - Z_975 * se, "hi": value + Z_975 * se, "se": se, "text": text,
            "power": {"mdd": mdd, "scale": "IS", "text": f"80% power to detect |flat − hierarchical| ≥ {mdd:.2f} IS at these hits"}}


def _covered_arms(pairs: list[tuple[Sweep, str, Sweep, str]], col: str, metric: str) -> tuple[Arms, dict]:
    """The runs of ``pairs`` by seed (the seeds both rows hold) restricted to the items both runs'
    Stage 2 covered, and the coverage counts (per side: covered items / items, over the runs of the
    first seed pair)."""
    out: Arms = {}
    counts: dict = {}
    for sa, ra, sb, rb in pairs:
        a_src, b_src = sa.sources(ra, col), sb.sources(rb, col)
        for seed in sorted(set(a_src) & set(b_src)):
            a, b = item_values(a_src[seed], metric), item_values(b_src[seed], metric)
            ca, cb = item_coverage(a_src[seed]), item_coverage(b_src[seed])
            if a is None or b is None or ca is None or cb is None:
                continue
            keep = [i for i in a if i in b and ca.get(i) and cb.get(i)]  # in file order: the same draws every build
            arm = out.setdefault(f"{ra} → {rb}", ({}, {}))
            arm[0][seed], arm[1][seed] = {i: a[i] for i in keep}, {i: b[i] for i in keep}
            counts.setdefault("grid", (sum(ca.values()), len(ca)))
            counts.setdefault("appendix_e", (sum(cb.values()), len(cb)))
    return out, counts


def appendix_e(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(7, "Stage 2 on realistic queries (App. E) restores realistic recall and costs verbose recall",
                "realistic recall restored; verbose recall drops")
    g, e, k = sw.get("grid"), sw.get("appendix_e"), s.k
    if not g or not e or not e.rows():
        f.why = "no appendix_e sweep"
        return f
    pairs = [(g, a, e, b) for b in e.rows() for a in g.rows(experiment="tg", tuning=b.rpartition("-")[2])]
    est, cov, arms = {}, {}, {}
    for b in ("realistic", "standard"):
        col = f"{b} Rc@{k}"
        arms[b] = seed_arms(pairs, col, f"Rc@{k}", same_runs=True)  # the seeds both sweeps hold, paired as covered is
        covered, cov[b] = _covered_arms(pairs, col, f"Rc@{k}")
        est[b] = {"all": arms_diff(arms[b], s.resamples), "covered": arms_diff(covered, s.resamples)}
    if not est["realistic"]["all"] or not est["standard"]["all"]:
        f.why = "no TG run of the grid with the same tuning and seeds"
        return f
    judged = "covered" if est["realistic"]["covered"] and est["standard"]["covered"] else "all"

    def cover_text(b: str) -> str:
        c = cov.get(b) or {}
        return (f"App. E covers {c['appendix_e'][0]} of {c['appendix_e'][1]}, TG {c['grid'][0]} of {c['grid'][1]}" if c
                else "coverage unknown")

    f.ours = "; ".join(f"{b} Rc@{k} App. E − TG on covered items {pct(est[b]['covered'], True)} ({cover_text(b)}), "
                       f"all items {pct(est[b]['all'], True)}" for b in ("realistic", "standard"))
    verdicts = [verdict(est["realistic"][judged]), verdict(est["standard"][judged], expect_positive=False)]
    f.verdict = conjunction(verdicts)
    parts = [f"the {what} is {v}" for what, v in zip(("realistic gain", "standard drop"), verdicts) if v != "yes"]
    if parts:
        f.why = "; ".join(parts) + " (both parts must be yes)"
    if judged == "all":
        f.why = "; ".join(filter(None, [f.why, "no coverage known for these runs: judged on all items"]))
    f.details = {"realistic_gain": est["realistic"], "standard_change": est["standard"], "coverage": cov, "judged_on": judged,
                 "verdicts": verdicts, "rule": RULES[7]}
    # the arms by sweep (both are labelled tg-<tuning>); seeds are those the two sweeps share (paired per seed)
    paired = {}
    for name, (a, b) in arms["realistic"].items():
        ra, _, rb = name.partition(" → ")
        paired[f"grid {ra}"], paired[f"appendix_e {rb}"] = len(a), len(b)
    return seed_gate(f, paired, s.min_seeds)


FINDINGS = [stage2_lift, realistic_collapse, flat_vs_hierarchical_is, probes_near_chance,
            formats_and_lora_retain, hierarchical_drift, appendix_e]
"""In the paper's order; each called as ``finding(sweeps, Settings)``."""
