"""The regime each arm of a study reached: its constrained standard Rc@k after Stage 2 (over seeds, and each seed's)
against the rules that chose the study's setting (a pilot's, ``StudyConfig.regime_targets``). A description, not a
verdict: no finding rests on it."""

from __future__ import annotations

from typing import Mapping

from toolsense.reporting.tables import markdown_table, pct


def regime_table(cells: Mapping[str, dict | None], seeds: Mapping[str, Mapping[int, float]],
                 targets: Mapping[str, float], k: int, source: str = "") -> str:
    """Per arm of ``targets`` (row -> the minimum Rc@k): ``cells[row]`` (the value over its seeds with its interval),
    ``seeds[row]`` (seed -> the run's value), the target and whether the mean and each seed reach it."""
    if not targets:
        return ""
    head = (f"Constrained standard Rc@{k} after Stage 2 per arm, against the rules that chose this setting"
            f"{f' ({source})' if source else ''}. A description of the regime each arm reached, not a verdict: no finding "
            "rests on it, and the rules are not part of the registered plan.\n")
    rows = []
    for row, target in targets.items():
        cell, by_seed, rule = cells.get(row), dict(seeds.get(row) or {}), f"≥ {100 * target:.0f}%"
        if not cell or cell.get("value") is None:
            rows.append([row, "0", "—", "—", rule, "no run yet"])
            continue
        per_seed = ", ".join(f"s{s} {100 * v:.1f}%" for s, v in sorted(by_seed.items())) or "—"
        below = [s for s, v in sorted(by_seed.items()) if v < target]
        met = "yes" if cell["value"] >= target else "no"
        if below and met == "yes":
            met += f" (mean; seed{'s' * (len(below) > 1)} {', '.join(map(str, below))} below)"
        elif met == "no" and len(below) < len(by_seed):
            met += f" (mean; {len(by_seed) - len(below)} of {len(by_seed)} seeds reach it)"
        rows.append([row, str(len(by_seed)), pct(cell), per_seed, rule, met])
    return head + "\n" + markdown_table(["arm", "seeds", f"standard Rc@{k} (95% CI)", "per seed", "rule", "reached?"], rows) + "\n"
