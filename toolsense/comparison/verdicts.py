"""How a study's estimates become verdicts: differences over arms of runs by seed (each arm's runs
``trainer.seed -> item id -> value``; seed_stats.py over seeds and items, stats.py over items where
every arm has one seed), and the rules the findings state: **yes** — the expected sign, its 95% interval
excluding zero; **no** — excluding zero on the opposite side; **inconclusive (leans yes / no)** — the
interval holds zero; "near chance" an equivalence test against a stated margin (:func:`near_chance`)."""

from __future__ import annotations

from typing import Sequence

from toolsense.comparison.seed_stats import seed_contrast, seed_normalized_gain_contrast, seed_paired_diff
from toolsense.comparison.stats import contrast, normalized_gain_contrast, paired_diff

Arms = dict[str, tuple[dict[int, dict], dict[int, dict]]]
"""``"A → B" -> (A's runs, B's runs)``, each ``trainer.seed -> item id -> value``: what seed_stats pairs."""


def arm_seeds(arms: Arms) -> dict[str, int]:
    """Row -> its number of seeds in ``arms`` (each row of a pair is an arm)."""
    out: dict[str, int] = {}
    for name, (a, b) in arms.items():
        ra, _, rb = name.partition(" → ")
        out[ra], out[rb] = max(out.get(ra, 0), len(a)), max(out.get(rb, 0), len(b))
    return out


def arms_diff(arms: Arms, resamples: int) -> dict | None:
    """B − A paired per item over ``arms``: with one seed in every arm (the same seed in both), over
    items alone (stats.paired_diff, pooled over the pairs), marked ``one_seed``; otherwise over seeds
    and items, paired by seed where both arms hold the same seeds (seed_stats.seed_paired_diff)."""
    if not arms:
        return None
    if all(len(a) == 1 and set(a) == set(b) for a, b in arms.values()):
        est = paired_diff([(a[s], b[s]) for a, b in arms.values() for s in a], resamples)
        return est and {**est, **ONE_SEED}
    return seed_paired_diff(arms)


ONE_SEED = {"n_seeds": 1, "one_seed": True, "method": "items only: cluster bootstrap (one seed)"}
"""What an estimate over arms of one seed each carries: its interval is over items alone."""


def _single(*arms: Arms) -> bool:
    return all(len(a) == 1 and set(a) == set(b) for x in arms for a, b in x.values())


def arms_contrast(first: Arms, second: Arms, resamples: int) -> dict | None:
    """(B − A over ``first``) − (B − A over ``second``): stats.contrast over items where every arm has
    one seed (marked), else seed_stats.seed_contrast (a run in both sides one unit)."""
    if not first or not second:
        return None
    if _single(first, second):
        est = contrast(*([(a[s], b[s]) for a, b in side.values() for s in a] for side in (first, second)), resamples)
        return est and {**est, **ONE_SEED}
    return seed_contrast(first, second)


def arms_gain(first: Arms, second: Arms, resamples: int) -> dict | None:
    """The normalized gain of ``first`` minus that of ``second`` (each arm pair: (before, after) of the
    same runs; groups the pairs both hold), averaged over groups: stats.normalized_gain_contrast over
    items where every arm has one seed (marked), else seed_stats.seed_normalized_gain_contrast."""
    groups = [g for g in first if g in second]
    if _single(first, second):
        est = normalized_gain_contrast({g: [(a[s], b[s]) for s in a] for g, (a, b) in first.items()},
                                       {g: [(a[s], b[s]) for s in a] for g, (a, b) in second.items()}, resamples)
        return est and {**est, **ONE_SEED}
    return seed_normalized_gain_contrast({g: {s: (first[g][0][s], first[g][1][s]) for s in first[g][0]} for g in groups},
                                         {g: {s: (second[g][0][s], second[g][1][s]) for s in second[g][0]} for g in groups})


VERDICT_RULE = ("**yes** — the paper's sign, and the 95% interval excludes zero; **no** — the interval excludes zero on the "
                "opposite side; **inconclusive (leans yes / no)** — the interval holds zero (the point estimate's side named)")
"""The rule of :func:`verdict`, stated in the report's header."""


def verdict(est: dict | None, expect_positive: bool = True) -> str:
    """yes / no / inconclusive (leans …) from an estimate of an effect the paper found positive
    (or negative, ``expect_positive=False``): "no" needs the interval to exclude zero on the
    opposite side — a wrong-signed point estimate whose interval holds zero is inconclusive."""
    if not est or est.get("value") is None:
        return "n/a"
    sign = 1 if expect_positive else -1
    v = est["value"] * sign
    lo, hi = est.get("lo"), est.get("hi")
    if lo is not None and hi is not None:
        lo, hi = sorted((lo * sign, hi * sign))
        if lo > 0:
            return "yes"
        if hi < 0:
            return "no"
    return "inconclusive" if v == 0 else f"inconclusive (leans {'yes' if v > 0 else 'no'})"


EQUIVALENCE_RULE = ("near chance: **yes** when the 90% interval (two one-sided tests at 5%) lies inside chance ± margin, "
                    "**no** when the 95% interval lies wholly outside it, **inconclusive (too few items)** when the 90% "
                    "interval is wider than the band, else inconclusive (leans …)")


def near_chance(est: dict | None, chance: float, margin: float) -> str:
    """An equivalence test of "the score is near chance": yes when the 90% interval (``lo90``,
    ``hi90``; TOST at α = 5%) lies inside ``chance ± margin``; no when the 95% interval lies
    wholly outside the band; "inconclusive (too few items)" when the 90% interval is wider than
    the band itself (no outcome could show equivalence); else inconclusive, leaning by whether
    the point estimate lies inside the band. The paper's 31.4% on 496 4-option items (90%
    interval about [28.0, 34.8]) is near chance 25% ± 10 pp."""
    if not est or est.get("value") is None:
        return "n/a"
    lo90, hi90 = est.get("lo90"), est.get("hi90")
    if lo90 is None or hi90 is None:
        return "inconclusive (no interval)"
    band = (chance - margin, chance + margin)
    if band[0] <= lo90 and hi90 <= band[1]:
        return "yes"
    if (est.get("lo") is not None and est["lo"] > band[1]) or (est.get("hi") is not None and est["hi"] < band[0]):
        return "no"
    if hi90 - lo90 > 2 * margin:
        return "inconclusive (too few items)"
    return f"inconclusive (leans {'yes' if band[0] <= est['value'] <= band[1] else 'no'})"


def conjunction(verdicts: Sequence[str]) -> str:
    """The verdict of a claim that needs every part (finding 7: realistic up *and* standard down): yes when every
    part is yes, no when any is no, else inconclusive, leaning no when any part leans no."""
    if all(v == "yes" for v in verdicts):
        return "yes"
    if "no" in verdicts:
        return "no"
    return f"inconclusive (leans {'no' if any('leans no' in v for v in verdicts) else 'yes'})"


def combine(verdicts: Sequence[str]) -> str:
    """One verdict from several parts of a finding: yes when every part is yes, no when any is
    no, n/a or untestable when every part is; else inconclusive (leaning the way most lean)."""
    vs = [v for v in verdicts if v not in ("n/a", "untestable")]
    if not vs:
        return "untestable" if "untestable" in verdicts else "n/a"
    if all(v == "yes" for v in vs):
        return "yes"
    if "no" in vs:
        return "no"
    if any("too few items" in v for v in vs):
        return "inconclusive (too few items)"
    yes = sum(v in ("yes", "inconclusive (leans yes)") for v in vs)
    return f"inconclusive (leans {'yes' if yes >= len(vs) - yes else 'no'})"


