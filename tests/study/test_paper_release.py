"""paper/release.py: the released RRB part over the 5,348-tool release catalog beside the full one —
the section's arithmetic on known estimates, and the real setting on the shared data (skipped without it)."""

from __future__ import annotations

from toolsense.metrics.intervals import Estimate
from toolsense.paper.page import load_cell
from toolsense.paper.release import release_direction, release_section
from toolsense.paper.tables import BENCHMARKS, SETTINGS, run_setting


class Grid:
    """page.Grid's two lookups over fixed estimates: (setting, bench, metric) -> Estimate."""

    def __init__(self, cells: dict):
        self.cells = cells

    def est(self, setting: str, bench: str, metric: str):
        return self.cells.get((setting, bench, metric))

    def delta(self, base: str, other: str, bench: str, metric: str):
        a, b = self.est(base, bench, metric), self.est(other, bench, metric)
        return Estimate(b.value - a.value, b.lo - a.hi, b.hi - a.lo) if a and b else None


def test_the_direction_under_each_catalog():
    e = lambda v: Estimate(v, v - 0.05, v + 0.05)  # noqa: E731
    grid = Grid({("bm25_toolgen", "G1", "Rc@50"): e(0.578), ("bm25_toolgen", "rrb", "Rc@50"): e(0.519),
                 ("bm25_toolgen_release", "rrb", "Rc@50"): e(0.675)})
    text = release_section(grid)
    assert ("| `bm25_toolgen` / `bm25_toolgen_release` | Rc@50 | 57.8 [52.8, 62.8] | 51.9 [46.9, 56.9] | "
            "67.5 [62.5, 72.5] |") in text
    assert "-5.9: falls | +9.7: rises |" in text
    assert release_direction(grid) == ("Over the 5,348-tool release catalog (RRB part only; G1 over the full one), "
                                       "1 of 1 cells rise from G1: `bm25_toolgen_release` Rc@50 (+9.7: rises) "
                                       "(section below).")
    assert "not run" in release_section(Grid({}))


def test_bm25_over_the_release_catalog_on_the_released_rrb_part(shared_data, tmp_path):
    setting = next(s for s in SETTINGS if s.name == "bm25_release")
    run_setting(setting, tmp_path, BENCHMARKS, str(shared_data))
    assert not (tmp_path / "bm25_release" / "G1").exists()  # the release catalog holds the RRB's gold tools only
    cell = load_cell(tmp_path, setting, "rrb")
    assert len(cell.ids) == 243
    assert cell.values["Rc@50"].sum() == 196 and cell.values["Rc@5"].sum() == 139  # 80.7% and 57.2%
