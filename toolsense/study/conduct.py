"""The report's "How the runs ran" section: the regime each arm reached (the grid's per-seed values read here), the
code state of every finished run and the operator's interruptions (toolsense/conduct/). Read from the files under the
study's root and its config alone, so the archive rebuilds the same section."""

from __future__ import annotations

from typing import Any, Mapping

from toolsense.comparison.runs import item_values
from toolsense.conduct.code_states import code_states, evaluation_states
from toolsense.conduct.interruptions import interruptions_table
from toolsense.conduct.regime import regime_table
from toolsense.metrics.registry import METRICS
from toolsense.study.sweep import Sweep, floor_cell, metric_column


def seed_values(g: Sweep, row: str, k: int) -> dict[int, float]:
    """seed -> the run's constrained standard Rc@k (its mean over items), read as the retrieval floor reads it: the
    arm's own standard benchmark, also in a view that substitutes the primary."""
    out = {}
    for seed, path in sorted(getattr(g, "primary", g).sources(row, metric_column("standard", "Rc", k)).items()):
        vals = item_values(path, METRICS.key("Rc", k))
        if vals:
            out[seed] = sum(vals.values()) / len(vals)
    return out


def conduct_section(cfg: Any, sweeps: Mapping[str, Sweep], registered_commit: str | None) -> str:
    """Regime per arm (where ``regime_targets`` is set), code states, interruptions."""
    parts = []
    targets, g = dict(getattr(cfg, "regime_targets", None) or {}), sweeps.get("grid")
    if targets:
        cells = {row: floor_cell(g, row, cfg.k) if g else None for row in targets}
        seeds = {row: seed_values(g, row, cfg.k) if g else {} for row in targets}
        parts += ["### Regime of each arm\n", regime_table(cells, seeds, targets, cfg.k, getattr(cfg, "regime_source", "") or "")]
    parts += ["### Code state of each finished run\n", code_states(cfg.root, registered_commit)]
    evals = evaluation_states(cfg.root, registered_commit)
    parts += ["### Code state of each evaluation\n", evals] if evals else []
    parts += ["### Interruptions\n", interruptions_table(list(getattr(cfg, "interruptions", None) or []))]
    return "\n".join(parts)
