"""Finding 7: Stage 2 on realistic queries (App. E) restores realistic recall and costs verbose
recall. App. E − TG Rc@k, realistic expected up and standard down, paired per query and seed on
the items both runs' Stage 2 covered; yes when both parts are. An earlier App. E sweep (another
configuration: sweep role ``appendix_e_earlier``) is said beside it, not pooled. Its table: the
same at every k and scale of the plan."""

from __future__ import annotations

from typing import Any, Sequence

from toolsense.comparison.runs import item_values
from toolsense.comparison.scales import rate_contrast
from toolsense.comparison.verdicts import Arms, arms_diff, conjunction, verdict
from toolsense.evaluation.coverage import item_coverage
from toolsense.metrics.registry import METRICS
from toolsense.reporting.tables import pct
from toolsense.study.findings.base import FindingSpec, TableInput, register
from toolsense.study.findings.tables import table_of
from toolsense.study.sweep import Finding, Settings, Sweep, below_floor, metric_column, seed_arms, seed_gate
from toolsense.utils.io import DataError

NUMBER = 7
RULE = ("sign rule on App. E − TG Rc@k (realistic: up; standard: down), paired per query and seed, on the test items whose "
        "gold tool both runs' Stage 2 trained on (coverage shown beside); yes when both parts are yes")


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
    f = Finding(NUMBER, "Stage 2 on realistic queries (App. E) restores realistic recall and costs verbose recall",
                "realistic recall restored; verbose recall drops")
    g, e, k = sw.get("grid"), sw.get("appendix_e"), s.k
    if not g or not e or not e.rows():
        f.why = "no appendix_e sweep"
        return f
    pairs = [(g, a, e, b) for b in e.rows() for a in g.rows(experiment="tg", tuning=b.rpartition("-")[2])]
    est, cov, arms = {}, {}, {}
    for b in ("realistic", "standard"):
        col = metric_column(b, "Rc", k)
        arms[b] = seed_arms(pairs, col, METRICS.key("Rc", k), same_runs=True)  # the seeds both sweeps hold, paired as covered is
        covered, cov[b] = _covered_arms(pairs, col, METRICS.key("Rc", k))
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
                 "verdicts": verdicts, "rule": RULE}
    # the arms by sweep (both are labelled tg-<tuning>); seeds are those the two sweeps share (paired per seed)
    paired = {}
    for name, (a, b) in arms["realistic"].items():
        ra, _, rb = name.partition(" → ")
        paired[f"grid {ra}"], paired[f"appendix_e {rb}"] = len(a), len(b)
    return seed_gate(f, paired, s.min_seeds)


def appendix_e_finding(sw: dict[str, Sweep], s: Settings) -> Finding:
    """The finding on ``sw["appendix_e"]``, and an earlier App. E sweep's verdict said beside it (its runs
    are another configuration, not pooled) where ``sw`` holds one."""
    f = appendix_e(sw, s)
    earlier = sw.get("appendix_e_earlier")
    if earlier is not None:
        old = appendix_e({"grid": sw["grid"], "appendix_e": earlier}, s)
        f.details["earlier"] = {"sweep": earlier.name, "verdict": old.verdict, "ours": old.ours}
        f.why = "; ".join(x for x in (f.why, f"the earlier `{earlier.name}` sweep (Stage 2 on the short split alone, another "
                                             f"configuration, not pooled here): {old.verdict} — {old.ours}") if x)
    return f


def appendix_e_sensitivity(g: Sweep, e: Sweep, ks: Sequence[int], scales: Sequence[str], floor: float,
                           k_table: int = 5) -> dict[str, Any] | None:
    """Finding 7 at every (k, scale); None without a TG row of the same tuning as an App. E row."""
    pairs = [(g, a, e, b) for b in e.rows() for a in g.rows(experiment="tg", tuning=b.rpartition("-")[2])]
    if not pairs:
        return None
    below = below_floor(g, sorted({p[1] for p in pairs}), floor, k_table)
    keep = [p for p in pairs if p[1] not in below]
    labels = [f"{p[1]} → {p[3]} {b}" for p in pairs for b in ("realistic", "standard")]
    cells, not_evaluated = {}, []
    for k in ks:
        try:
            arms = {}
            for b in ("realistic", "standard"):
                col = metric_column(b, "Rc", k_table)
                covered, _ = _covered_arms(pairs, col, METRICS.key("Rc", k))
                arms[b] = covered or seed_arms(pairs, col, METRICS.key("Rc", k))
        except DataError:
            not_evaluated.append(k)
            continue
        kept = {f"{p[1]} → {p[3]}" for p in keep}
        for scale in scales:
            est = {b: rate_contrast({n: a for n, a in arms[b].items() if n in kept}, scale, True, up=b == "realistic")
                   for b in arms}
            own = {f"{n} {b}": rate_contrast({n: a}, scale, True, up=b == "realistic")
                   for b in arms for n, a in arms[b].items()}
            cells[(k, scale)] = {"pooled": est["realistic"], "pooled_standard": est["standard"],
                                 "verdict": conjunction([verdict(est["realistic"]),
                                                         verdict(est["standard"], expect_positive=False)]),
                                 "per_row": own,
                                 "per_row_verdict": {n: verdict(x, expect_positive=n.endswith("realistic"))
                                                     for n, x in own.items()}}
    return table_of(NUMBER, cells, ks, scales, labels, below, floor, k_table, not_evaluated,
                  "realistic App. E − TG, pooled (verdict: both parts)")


def _app_e_arms(sw: dict[str, Sweep], s: Settings) -> list[tuple[Sweep, str]]:
    """The grid's TG rows and the App. E rows of the same tuning."""
    g, e = sw.get("grid"), sw.get("appendix_e")
    pairs = [(a, b) for b in e.rows() for a in g.rows(experiment="tg", tuning=b.rpartition("-")[2])] if g and e else []
    return [*dict.fromkeys((g, a) for a, _ in pairs), *dict.fromkeys((e, b) for _, b in pairs)]


def appendix_e_table(t: TableInput) -> dict[str, Any] | None:
    if t.app_e is None or not t.app_e.rows():
        return None
    return appendix_e_sensitivity(t.grid, t.app_e, t.ks, t.scales, t.plan.retrieval_floor, t.k_table)


register(FindingSpec(NUMBER, RULE, appendix_e_finding, appendix_e_table, reads=("grid", "appendix_e"), compares=_app_e_arms))
