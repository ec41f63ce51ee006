"""What several findings share: the rows a finding compares and those below the retrieval floor,
a finding's prose about seeds, a row's runs at a cut-off, and a probe cell with its card ceiling
(the report's retention section reads the ceiling too)."""

from __future__ import annotations

from typing import Any

from toolsense.comparison.runs import item_values
from toolsense.metrics.registry import METRICS
from toolsense.reporting.tables import pct
from toolsense.study.sweep import Finding, Settings, Sweep, below_floor, floor_cell
from toolsense.utils.io import DataError


def finding_rows(g: Sweep, n: int, s: Settings) -> tuple[list[str], list[str]]:
    """The Stage-2 rows that enter finding ``n`` (the plan's arms for it, else every row) and, second, those of
    them left out for not retrieving: constrained standard Rc@k below ``s.retrieval_floor`` (reported, not averaged in)."""
    rows = [r for r in g.rows() if not s.arms.get(n) or r in s.arms[n]]
    below = below_floor(g, rows, s.retrieval_floor, s.k)
    return [r for r in rows if r not in below], below


def left_out(g: Sweep, below: list[str], s: Settings) -> str:
    return "; ".join(f"left out: {r} (standard Rc@{s.k} {pct(floor_cell(g, r, s.k))} below the retrieval floor "
                     f"{100 * s.retrieval_floor:.0f}%: it does not retrieve; reported, not averaged in)" for r in below)


def floor_only(f: Finding, g: Sweep, below: list[str], s: Settings) -> Finding:
    f.verdict, f.why = "untestable", "every configuration it compares is below the retrieval floor"
    f.ours = left_out(g, below, s)
    return f


def cell_values(sweep: Sweep, rows: list[str], col: str) -> list[float]:
    return [c["value"] for r in rows if (c := sweep.cell(r, col)) and c.get("value") is not None]


def seeds_prose(est: dict | None) -> str:
    """How an estimate treats seeds, for a finding's prose."""
    if not est:
        return "—"
    if est.get("one_seed") and "seeds" not in est:
        return "one seed per configuration: intervals over queries alone"
    seeds = est.get("seeds") or {}
    return (f"intervals over seeds and queries ({', '.join(f'{g}: {n}' for g, n in seeds.items())} seeds)"
            + ("; an arm of one seed counts by its queries alone" if est.get("one_seed") else ""))


def runs_at(g: Sweep, row: str, col: str, k: int) -> dict[int, dict]:
    """A row's runs in ``col`` at cut-off ``k``: seed -> item id -> hit (DataError: no hits at k)."""
    out = {s: v for s, p in g.sources(row, col).items() if (v := item_values(p, METRICS.key("Rc", k))) is not None}
    if out and any(not v for v in out.values()):
        raise DataError(f"{row} | {col}: no per-item Rc@{k}")
    return out


DEBIASED_COL = {"mcq": ("bal", "balanced_accuracy"), "qa": ("calib", "calibrated_accuracy")}
"""A probe's debiased token column and its per-item metric: what the probe findings are judged on where
the run has it (a one-answer model's raw accuracy is the label mix of its favourite slot)."""


def probe_cells(g: Sweep, row: str, bench: str, mode: str) -> dict[str, Any]:
    """A probe cell and its debiased one: MCQ position-balanced (else circular) accuracy, QA calibrated."""
    deb = g.cell(row, f"{bench} {mode} {DEBIASED_COL[bench][0]}")
    if deb is None and bench == "mcq":
        deb = g.cell(row, f"mcq {mode} circ")
    return {"acc": g.cell(row, f"{bench} {mode} acc"), "debiased": deb}


def ceiling_above_chance(g: Sweep, row: str, bench: str) -> bool:
    """Whether card mode (the tool's description in the prompt) answers this benchmark above
    chance, raw or debiased (a letter prior can hide what the model read: the balanced score
    shows it) — asked per benchmark: a model may read QA cards and not MCQ ones."""
    card = probe_cells(g, row, bench, "card")
    chance = (card["acc"] or {}).get("chance", 0.25 if bench == "mcq" else 0.5)
    return any(e and e.get("lo") is not None and e["lo"] > chance for e in (card["acc"], card["debiased"]))


