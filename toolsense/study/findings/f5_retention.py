"""Finding 5: multi-format memorization (TG-3FM) retains more probe knowledge than TG, and LoRA more
than FFT. The sign rule on the paired MCQ token difference of each pair, only between runs whose card
ceilings are above chance and within the ceiling margin of each other."""

from __future__ import annotations

from dataclasses import replace

from toolsense.comparison.verdicts import arm_seeds, combine, verdict
from toolsense.reporting.tables import pct
from toolsense.study.findings.base import FindingSpec, register
from toolsense.study.findings.common import DEBIASED_COL, ceiling_above_chance, probe_cells
from toolsense.study.sweep import Finding, Settings, Sweep, paired, seed_arms, seed_gate

NUMBER = 5
RULE = ("sign rule on the paired MCQ token difference (TG-3FM − TG; LoRA − FFT), per item (and seed where both arms "
               "hold the same seeds), the interval over seeds and items; "
               "untestable unless some compared pair has both runs' MCQ card ceiling above chance; a pair whose card ceilings "
               "(debiased where the runs have it) differ by more than the ceiling margin is left out, \"confounded by card ceiling\"; "
               "LoRA − FFT on TG-3FM where the sweep has both tunings of it (the paper's 41.7 vs 29.8), else on TG (said)")



def _card_ceiling(g: Sweep, row: str) -> float | None:
    """A run's MCQ card ceiling: the debiased card score where it has one, else the raw one."""
    card = probe_cells(g, row, "mcq", "card")
    e = card["debiased"] or card["acc"]
    return e.get("value") if e else None


def _comparable(g: Sweep, pairs: list, margin: float) -> tuple[list, list[str]]:
    """The pairs whose two card ceilings differ by at most ``margin`` (a difference of token scores
    between runs that read the card unequally measures the ceiling, not retention), and a
    "confounded by card ceiling (X% vs Y%)" for each pair left out."""
    kept, out = [], []
    for p in pairs:
        ca, cb = _card_ceiling(g, p[1]), _card_ceiling(g, p[3])
        if ca is not None and cb is not None and abs(ca - cb) > margin:
            out.append(f"{p[3]} − {p[1]} confounded by card ceiling ({100 * cb:.1f}% vs {100 * ca:.1f}%)")
        else:
            kept.append(p)
    return kept, out


def formats_and_lora_retain(sw: dict[str, Sweep], s: Settings) -> Finding:
    f = Finding(NUMBER, "Multi-format memorization (TG-3FM) retains more probe knowledge than TG; LoRA more than FFT",
                "41.7% vs 29.8%")
    g, r = sw.get("grid"), s.resamples
    if not g or not g.comp:
        f.why = "no results"
        return f
    fmt_all, on, tun_all = _retention_pairs(g)
    (fmt, conf_f), (tun, conf_t) = _comparable(g, fmt_all, s.ceiling_margin), _comparable(g, tun_all, s.ceiling_margin)
    short, metric = DEBIASED_COL["mcq"]
    debiased = all(g.cell(x, f"mcq token {short}") for x in g.rows() if g.cell(x, "mcq token acc"))
    col, metric, what = (f"mcq token {short}", metric, "position-balanced") if debiased else ("mcq token acc", "accuracy", "raw")
    halves = (("formats", fmt, fmt_all, conf_f), ("tuning", tun, tun_all, conf_t))
    est = {name: paired(pairs, col, metric, r) for name, pairs, _, _ in halves}
    raw = {name: paired(pairs, "mcq token acc", "accuracy", r) for name, pairs, _, _ in halves} if debiased else est
    if not fmt_all and not tun_all or not any(est.values()) and not conf_f + conf_t:
        f.why = "needs TG and TG-3FM, or LoRA and FFT, with probe results"
        return f

    def half(name: str, label: str, confounded: list[str]) -> str:
        if confounded and not est[name]:
            return f"{label} {'; '.join(confounded)}"
        return (f"{label} {what} {pct(est[name], True)}" + (f", raw {pct(raw[name], True)}" if debiased else "")
                + (f" ({'; '.join(confounded)}: left out)" if confounded else ""))
    f.ours = (f"MCQ token accuracy after Stage 2: {half('formats', 'TG-3FM − TG', conf_f)}; "
              f"{half('tuning', 'LoRA − FFT on ' + {'tg': 'TG', 'tg_3fm': 'TG-3FM'}[on], conf_t)} (card ceilings compared within "
              f"{100 * s.ceiling_margin:.0f} pp; paired per item, and per seed where both arms hold the same seeds)")
    parts = [verdict(e) if e else (f"confounded by card ceiling ({c[0].rpartition('(')[2]}" if c else None)
             for (_, _, _, c), e in zip(halves, est.values())]
    f.verdict = combine([v for v in parts if v and not v.startswith("confounded")]) if any(est.values()) else \
        next(v for v in parts if v)
    f.why = "; ".join(conf_f + conf_t)
    if on == "tg" and tun_all:
        f.why = "; ".join(x for x in (f.why, "LoRA − FFT on TG: this sweep has no TG-3FM pair of tunings (the paper's is TG-3FM)") if x)
    compared = [(a, b) for _, a, _, b in fmt + tun if g.cell(a, "mcq card acc") and g.cell(b, "mcq card acc")]
    ceiling = {x: ceiling_above_chance(g, x, "mcq") for pair in compared for x in pair}
    if compared and not any(ceiling[a] and ceiling[b] for a, b in compared):
        at_chance = sorted(x for x, ok in ceiling.items() if not ok)
        which = f"all {len(at_chance)} runs" if len(at_chance) == len(ceiling) else ", ".join(at_chance)
        f.verdict, f.why = "untestable", (f"no compared pair has both runs' card ceiling above chance (at chance: {which}): "
                                          "differences between runs that cannot answer carry no knowledge")
    not_run = [n for n, pairs in (("TG-3FM − TG", fmt_all), ("LoRA − FFT", tun_all)) if not pairs]
    if not_run and f.verdict != "untestable":  # the verdict rests on one half only: say which was not run
        f.why = "; ".join(x for x in (f.why, f"{' and '.join(not_run)}: not run in this sweep (no pair of "
                                              "runs to compare); the verdict rests on the other half alone") if x)
    f.details = {**est, "judged_on": what, "raw": raw, "ceiling_above_chance": ceiling, "tuning_on": on,
                 "card_ceiling": {x: _card_ceiling(g, x) for _, a, _, b in fmt_all + tun_all for x in (a, b)},
                 "confounded": conf_f + conf_t, "ceiling_margin": s.ceiling_margin, "not_run": not_run, "rule": RULE}
    return seed_gate(f, arm_seeds(seed_arms(fmt + tun, col, metric)), s.min_seeds) if fmt + tun else f


def _retention_pairs(g: Sweep) -> tuple[list, str, list]:
    """TG → TG-3FM pairs per tuning; the experiment LoRA − FFT is read on; its FFT → LoRA pairs."""
    fmt_all = [(g, a, g, b) for t in ("lora", "full") for a in g.rows("tg", t) for b in g.rows("tg_3fm", t)]
    on = "tg_3fm" if g.rows("tg_3fm", "full") and g.rows("tg_3fm", "lora") else "tg"  # the paper's 41.7 vs 29.8 is TG-3FM
    return fmt_all, on, [(g, a, g, b) for a in g.rows(on, "full") for b in g.rows(on, "lora")]


def _retention_arms(sw: dict[str, Sweep], s: Settings) -> list[tuple[Sweep, str]]:
    g = sw.get("grid")
    if not g or not g.comp:
        return []
    fmt_all, _, tun_all = _retention_pairs(g)
    return list(dict.fromkeys((g, x) for p in fmt_all + tun_all for x in (p[1], p[3])))


def _ceiling_margin(s: Settings, rule) -> Settings:
    """The registered margin between two runs' card ceilings."""
    return replace(s, ceiling_margin=rule.margin)


register(FindingSpec(NUMBER, RULE, formats_and_lora_retain, compares=_retention_arms, configure=_ceiling_margin))
