"""The plan's power calculation as the report prints it: each finding's (``findings.<n>.power``, else the plan's
``power``) seeds per arm (plan/seeds.py) beside the seeds its arms have."""

from __future__ import annotations

from typing import Mapping

from toolsense.plan.config import AnalysisPlan
from toolsense.plan.seeds import detectable, seeds_needed
from toolsense.reporting.tables import markdown_table


def power_section(plan: AnalysisPlan, seeds: Mapping[int, Mapping[str, int]]) -> str:
    """Each finding's power calculation (its own ``power``, else the plan's) for the findings the plan registers (every
    finding of ``seeds`` where it registers none): the seeds per arm it asks for beside ``seeds`` (finding -> arm -> the
    seeds it has); "" without one."""
    rows = []
    for number, have in sorted(seeds.items()):
        rule = plan.findings.get(number)
        pw = (rule.power if rule else None) or plan.power
        if pw is None or (plan.findings and rule is None):
            continue
        n = seeds_needed(pw.between_seed_sd, pw.within_seed_se, pw.effect, pw.alpha, pw.power, pw.method, items=pw.items)
        short = [a for a, m in have.items() if n is None or m < n]
        fewest = min(have.values(), default=0)
        mde = (f"{100 * detectable(pw.between_seed_sd, pw.within_seed_se, fewest, pw.alpha, pw.power, pw.method, pw.items):.1f} pp"
               if fewest >= 2 else "—")
        rows.append([str(number), f"{100 * pw.effect:.1f} pp", f"{100 * pw.between_seed_sd:.1f} pp",
                     f"{100 * pw.within_seed_se:.1f} pp", f"{pw.alpha:g}, {pw.power:g}",
                     f"{n} ({pw.method})" if n else "none reaches it (the items' SE alone is too wide)",
                     ", ".join(f"{a} {m}" for a, m in have.items()) or "—", "short: " + ", ".join(short) if short else "yes",
                     mde, pw.source or "—"])
    if not rows:
        return ""
    return ("\n**Power (registered with the plan).** Seeds per arm for the interval of a paired difference of arm means to "
            "exclude 0 with the stated power at the stated effect, the variance across n seeds sd² / n + se² (se: the items', "
            "shared by every seed; plan/seeds.py); t: t quantiles on the Welch–Satterthwaite degrees of freedom of the two "
            "parts, as the verdicts' intervals; normal: z quantiles. Detectable: the smallest difference the fewest seeds run "
            "detect at that power.\n\n" + markdown_table(
                ["finding", "effect", "between-seed SD", "within-seed SE", "α, power", "seeds per arm needed", "seeds run",
                 "enough?", "detectable at the seeds run", "SDs from"], rows) + "\n")
