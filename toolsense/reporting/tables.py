"""The one home of how an estimate reads as text and how a table is rendered in Markdown.

An estimate is a results.json dict ``{"value", "lo", "hi"}``, optionally with ``sd`` (over
seeds); percent metrics are proportions shown x100 with one digit, ratios (IS@k) with two (each
metric's scale and column: metrics/registry.py).
Every table of the house — an evaluation's ``table.md``, a comparison's ``comparison.md``, the
study's report — is built from these functions and from results files alone, never from a
tracker. Statistics are computed elsewhere (``metrics/``, ``probe_stats.py``,
``comparison/stats.py``); this module only writes them down.
"""

from __future__ import annotations

from typing import Any, Sequence

from toolsense.metrics.registry import METRICS

DASH = "—"
"""A cell with nothing to show (an absent estimate, a metric that does not apply)."""


def estimate(est: dict | None, pct: bool = True, signed: bool = False, unit: str = "", digits: int | None = None,
             interval: bool = True) -> str:
    """``value[unit] ± sd [lo, hi]``: x100 with one digit (``pct``) or as is with two (``digits``
    overrides), ``+`` on positive values when ``signed`` (a difference), ``± sd`` when the estimate
    pools seeds, ``[lo, hi]`` when it has an interval (and ``interval``); '—' when absent."""
    if not est or est.get("value") is None:
        return DASH
    s = 100.0 if pct else 1.0
    d = digits if digits is not None else (1 if pct else 2)
    out = f"{est['value'] * s:{'+' if signed else ''}.{d}f}{unit}"
    if est.get("sd") is not None:
        out += f" ± {est['sd'] * s:.{d}f}"
    if interval and est.get("lo") is not None and est.get("hi") is not None:
        out += f" [{est['lo'] * s:.{d}f}, {est['hi'] * s:.{d}f}]"
    return out


def value_range(xs: list[float], scale: float = 100.0, unit: str = "%", d: int = 1) -> str:
    """``lo–hi`` of values (scaled, ``d`` decimals), one number where they agree, ``—`` for none."""
    if not xs:
        return "—"
    lo, hi = min(xs) * scale, max(xs) * scale
    return f"{lo:.{d}f}{unit}" if abs(hi - lo) < 10 ** -d else f"{lo:.{d}f}–{hi:.{d}f}{unit}"


def pct(est: dict | None, signed: bool = False) -> str:
    """A finding's number in prose: ``12.3% [4.5, 20.1]``, or ``+12.3 pp [...]`` for a difference,
    then ``n=3 sd 2.1`` (seeds, their SD) or ``†`` (one seed) where the estimate says (:func:`seeds_text`)."""
    if not est or est.get("value") is None:
        return DASH
    return estimate({**est, "sd": None}, signed=signed, unit=" pp" if signed else "%") + seeds_text(est)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def benchmark_label(res: dict) -> str:
    """A result's benchmark name, with " (sample)" when it was a sample of a released benchmark
    (results.json ``is_sample``), so no table passes a sample off as the benchmark."""
    return str(res["benchmark"]) + (" (sample)" if res.get("is_sample") else "")


def flag_text(top: dict[str, Any] | None) -> str:
    """``⚠ 100% 'A'`` for a flagged probe (one answer dominates; probe_stats.top_answer), else ''."""
    if not top or not top.get("flagged"):
        return ""
    return f"⚠ {100 * top['share']:.0f}% '{top['answer']}'"


def coverage_cell(res: dict[str, Any]) -> str:
    """``22/54 (41%) · any 30``: items every gold tool of which Stage 2 trained on, and those with
    one (evaluation/coverage.py; results of before 2026-12-03 counted "any" only: shown as
    ``any 30/54 (56%)``), or '—' where coverage is not applicable."""
    cov = res.get("coverage")
    if not cov or cov.get("fraction") is None:
        return DASH
    if "covered_any" not in cov:
        return f"any {cov['covered']}/{cov['n']} ({100 * cov['fraction']:.0f}%)"
    return f"{cov['covered']}/{cov['n']} ({100 * cov['fraction']:.0f}%) · any {cov['covered_any']}"


def debiased_cell(result: dict[str, Any]) -> str:
    """``circ 25.0 [..] / all 0.0 [..]`` (MCQ) or ``calib 50.0 [..]`` (QA); '—' without debias."""
    m = result.get("metrics") or {}
    if "circular_mean" in m:
        bal = f" / bal {estimate(m['balanced_accuracy'])}" if "balanced_accuracy" in m else ""
        return f"circ {estimate(m['circular_mean'])} / all {estimate(m['circular_all'])}{bal}"
    if "calibrated_accuracy" in m:
        return f"calib {estimate(m['calibrated_accuracy'])}"
    return DASH


PROBE_COLUMNS = ["probe acc %", "chance %", "majority %", "top answer", "debiased acc %"]


def probe_cells(result: dict[str, Any]) -> list[str]:
    """The probe columns of table.md: accuracy (flagged), chance, majority rate, top answer
    and its share, debiased accuracy. Results written before these fields existed show '—'."""
    flag = flag_text(result.get("top_answer"))
    acc = estimate(result["metrics"].get("accuracy")) + (f" {flag}" if flag else "")
    top = result.get("top_answer")
    majority = result.get("majority_rate")
    return [acc, f"{100 * result['chance']:.1f}" if result.get("chance") is not None else DASH,
            DASH if majority is None else f"{100 * majority:.1f}",
            DASH if not top else f"{100 * top['share']:.0f}% '{top['answer']}'", debiased_cell(result)]


def results_table(results: Sequence[dict], ks: Sequence[int]) -> str:
    """ONE table for a whole evaluation: a row per (benchmark, system). Retrieval rows fill a
    column per registered metric shown in tables (metrics/registry.py, in registration order): Rc@k,
    Rf@k (percent) and IS@k (ratio) with 95% intervals, then the multi-answer metrics COMPc@k /
    COMPf@k (every gold tool in the top k) and R-precision (constrained / free-form); a benchmark
    with several tiers (RRB easy / medium / hard) gets one more row per tier under its row, labelled
    ``<benchmark> [<tier>]``. Probe rows fill accuracy (flagged when one answer dominates), chance,
    majority rate, top answer and the debiased accuracy (probe_stats.py). ``covered``: items with a
    gold tool the run's Stage 2 trained on (coverage.py; '—' for untrained models and baselines).
    Missing gold tools / probe tools are counted in the last column."""
    header = ["benchmark", "system", "n", "covered"] + [h for h, _, _ in METRICS.table_columns(ks)] \
        + PROBE_COLUMNS + ["missing tools"]
    rows = []
    for r in results:
        probe = [DASH] * len(PROBE_COLUMNS) if r["kind"] == "retrieval" else probe_cells(r)
        rows.append([benchmark_label(r), r["system"], r["n"], coverage_cell(r)] + _retrieval_cells(r["metrics"], ks)
                    + probe + [r["missing"]["count"]])
        tiers = (r.get("tiers") or {}) if r["kind"] == "retrieval" else {}
        for tier, t in tiers.items() if len(tiers) > 1 else ():
            rows.append([f"{benchmark_label(r)} [{tier}]", r["system"], t["n"], DASH] + _retrieval_cells(t["metrics"], ks)
                        + [DASH] * len(PROBE_COLUMNS) + [DASH])
    return markdown_table(header, rows)


def _retrieval_cells(m: dict, ks: Sequence[int]) -> list[str]:
    """One row's retrieval cells: each table column of the registry, percent or ratio as registered."""
    return [estimate(est := METRICS.find(m, key), pct=spec.scale == "percent") + (f" {TRIVIAL_MARK}" if est and est.get("trivial") else "")
            for _, key, spec in METRICS.table_columns(ks)]


TRIVIAL_MARK = "(trivial)"
"""After a cell whose k reaches the number of tools the system ranks: every item with a known gold tool scores 100%."""


ONE_SEED_MARK = "†"
"""After a cell whose configuration has one training seed: its interval is over items alone."""

SEED_LEGEND = ("n = training seeds of the configuration, sd = the between-seed SD of their own estimates; with n ≥ 2 the "
               "interval resamples seeds and items (two-level: value ± t·se, comparison/seed_stats.py)")
ONE_SEED_LEGEND = (f"{ONE_SEED_MARK} one seed: one training run, not a configuration — its interval is over items alone "
                   "and says nothing of how another seed would score")


def seeds_text(est: dict, pct: bool = True, digits: int | None = None) -> str:
    """`` n=3 sd 2.1`` for a cell pooled over seeds (`` sd 2.1`` where the count is not recorded),
    `` †`` for a one-seed cell, else ''."""
    if est.get("one_seed"):
        return f" {ONE_SEED_MARK}"
    n, sd = est.get("n_seeds"), est.get("sd")
    if n is not None and n < 2:
        return ""
    d = digits if digits is not None else (1 if pct else 2)
    return (f" n={n}" if n else "") + ("" if sd is None else f" sd {sd * (100.0 if pct else 1.0):.{d}f}")


def comparison_cell(col: str, est: dict | None) -> str:
    """A cell of a comparison table (comparison/compare.py): ``value [lo, hi]`` (percent; IS and
    drift as plain numbers, drift with four digits and no interval), then ``n=3 sd 2.1`` (seeds and
    their SD) or ``†`` (one seed), a signed retention, a probe's ``(chance c, maj. m)``, its one-answer
    flag, ``⚑ n hits`` on an IS under min_hits; '—' when absent."""
    if not est or est.get("value") is None:
        return DASH
    bare = {**est, "sd": None}
    if col.startswith("drift "):
        return estimate(bare, pct=False, digits=4, interval=False) + seeds_text(est, pct=False, digits=4)
    pct = METRICS.scale_of(col.split(" ")[-1]) == "percent"
    out = estimate(bare, pct=pct, signed=col.startswith("retention ")) + seeds_text(est, pct)
    if est.get("chance") is not None:
        maj = est.get("majority_rate")
        out += f" (chance {100 * est['chance']:.0f}" + (f", maj. {100 * maj:.0f})" if maj is not None else ")")
    if est.get("flag"):
        out += f" {est['flag']}"
    if est.get("few_hits"):
        out += f" ⚑ {est.get('hits')} hits"
    return out
