"""docs/reference/paper_tables.md's builder: ToolGen's NDCG on hand-made rankings, and the whole command
(evaluate.py runs per setting, resumable, then the page from their samples) on the demo catalog."""

import json
import math

import pytest

from toolsense.metrics.ranking import ndcg_at
from toolsense.paper.page import Grid, load_cell, movers_table, write_page
from toolsense.paper.tables import SETTINGS, Setting, run_setting, toolgen_ndcg


def ranked(*tools, scores=None):
    scores = scores or list(range(len(tools), 0, -1))
    return [{"tool": t, "score": s} for t, s in zip(tools, scores)]


def test_toolgen_ndcg_ideal_dcg_counts_only_retrieved_gold():
    r = ranked("a", "x", "y", "z", "w")
    assert toolgen_ndcg(r, ["a", "b", "c"], 5) == 1.0  # one of three gold at rank 1: "perfect"
    assert ndcg_at([t["tool"] for t in r], ["a", "b", "c"], 5) == pytest.approx(1 / (1 + 1 / math.log2(3) + 0.5))
    assert toolgen_ndcg(ranked("x", "a"), ["a", "b"], 5) == pytest.approx(1 / math.log2(3))
    assert toolgen_ndcg(ranked("x", "y"), ["a"], 5) == 0.0  # no gold retrieved: 0, not undefined


def test_toolgen_ndcg_window_and_ties():
    r = ranked(*[f"t{i}" for i in range(10)], "a")  # gold at rank 11
    assert toolgen_ndcg(r, ["a", "b"], 5, window=100) == 0.0  # inside the window, outside the cutoff
    two = ranked("x", "b", *[f"t{i}" for i in range(10)], "a")
    assert toolgen_ndcg(two, ["a", "b"], 5, window=100) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert toolgen_ndcg(two, ["a", "b"], 5, window=5) == pytest.approx(1 / math.log2(3))  # "a" out of the window
    tie = ranked("x", "a", "y", scores=[3.0, 2.0, 2.0])  # a and y tie: the gain is shared over ranks 2 and 3
    assert toolgen_ndcg(tie, ["a"], 5) == pytest.approx(0.5 * (1 / math.log2(3) + 1 / math.log2(4)))
    assert toolgen_ndcg(tie, ["a"], 2) == pytest.approx(0.5 * (1 / math.log2(3)))


def test_page_from_two_settings_on_the_demo_catalog(tmp_path):
    settings = (Setting("bm25", "demo", "bm25", {}, "default"),
                Setting("bm25_toolgen", "demo", "bm25_toolgen", {}, "ToolGen's three"))
    benches = {"standard": "demo_standard"}
    extra = ["benchmarks.standard.limit=12", "metrics.resamples=200"]
    for s in settings:
        run_setting(s, tmp_path / "out", benches, "unused", extra)
    res = json.loads((tmp_path / "out/bm25/standard/bm25/results.json").read_text())
    assert res["n"] == 12 and res["fingerprint"]["decoding"]["top"] == 100
    stamp = (tmp_path / "out/bm25/results.json").stat().st_mtime_ns
    run_setting(settings[0], tmp_path / "out", benches, "unused", extra)  # done: skipped, nothing rewritten
    assert (tmp_path / "out/bm25/results.json").stat().st_mtime_ns == stamp

    cell = load_cell(tmp_path / "out", settings[0], "standard")
    assert cell.values["Rc@50"].mean() == pytest.approx(res["metrics"]["Rc@50"]["value"])
    assert cell.values["NDCG@5"].mean() == pytest.approx(res["metrics"]["ndcg_c@5"]["value"])
    rows = [json.loads(x) for x in (tmp_path / "out/bm25/standard/bm25/samples.jsonl").read_text().splitlines()]
    assert list(cell.values["ToolGen NDCG@5"]) == [toolgen_ndcg(r["constrained"], r["gold"], 5) for r in rows]
    grid = Grid(tmp_path / "out", settings, ["standard"])
    table = movers_table(grid, "Rc@5", "bm25", ["bm25", "bm25_toolgen", "not_run"])
    rc5 = res["metrics"]["Rc@5"]
    assert f"| `bm25` | default | {100 * rc5['value']:.1f} [" in table and "not_run" not in table
    delta = grid.delta("bm25", "bm25_toolgen", "standard", "Rc@5")
    other = grid.est("bm25_toolgen", "standard", "Rc@5").value
    assert delta.value == pytest.approx(other - rc5["value"]) and f"({100 * delta.value:+.1f} [" in table

    page = write_page(tmp_path / "out", tmp_path / "paper_tables.md", settings, ["standard"])
    text = page.read_text()
    assert "released RRB, part (243 of 500)" in text and "| BM25 | G1 (474 solvable queries) | 27.8 | — | — | not run |" in text
    assert str(tmp_path) not in text  # no machine path on the page


def test_the_settings_cover_each_choice_once():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    fields = {(s.catalog, s.baseline, tuple(sorted(s.fields.items()))) for s in SETTINGS}
    assert len(fields) == len(SETTINGS)  # no two settings are the same evaluation
    assert {"bm25", "bm25_toolgen", "bm25_clean", "dense"} <= set(names)


def test_density_subsets_keep_gold_and_a_seeded_share_of_documented_tools(demo_catalog, tmp_path):
    from toolsense.baselines.config import BaselineConfig
    from toolsense.catalog import Catalog, Tool, load_demo_queries
    from toolsense.paper.density import density_curve, documented, subsets

    cat = Catalog(list(demo_catalog)[:39] + [Tool.from_name("Bare&&x", tool_description="a service, no API text")])
    gold = {t.name for t in list(cat)[:3]}
    subs = subsets(cat, gold)
    assert "Bare&&x" in subs["all"].names and all("Bare&&x" not in subs[n].names for n in subs if n != "all")
    others = [t.name for t in cat if documented(t) and t.name not in gold]
    assert len(subs["all"]) == len(cat) and len(subs["documented"]) == len(gold) + len(others)
    assert len(subs["documented_half"]) == len(gold) + round(len(others) / 2)
    assert set(subs["documented_quarter"].names) <= set(subs["documented_half"].names) <= set(subs["documented"].names)
    assert gold <= set(subs["documented_quarter"].names) and subsets(cat, gold)["documented_half"].names == subs["documented_half"].names

    queries = [q for q in load_demo_queries() if set(q.tools) <= set(cat.names)][:6]
    curve = density_curve(tmp_path, cat, {"demo": queries}, {"bm25": BaselineConfig()})
    query_gold = {t for q in queries for t in q.tools}
    assert curve["all"]["n_tools"] == 40 and curve["documented"]["n_documented_distractors"] == sum(
        documented(t) and t.name not in query_gold for t in cat)
    assert 0 <= curve["documented_quarter"]["bm25"]["demo"]["Rc@50"]["value"] <= 1
    assert json.loads((tmp_path / "density.json").read_text()) == curve  # cached: a second call reads the file
    assert density_curve(tmp_path, cat, {}, {}) == curve


def test_rrb_part_reweighted_to_the_full_tier_mix():
    import numpy as np

    from toolsense.paper.page import Cell, reweighted

    cell = Cell([str(i) for i in range(7)], {"m": np.array([1, 1, 0, 0, 0, 0, 0.0])},
                ["easy", "easy", "medium", "hard", "hard", "hard", "hard"])
    assert cell.estimate("m").value == pytest.approx(2 / 7)
    est = reweighted(cell, "m", {"easy": 1, "medium": 1, "hard": 1})
    assert est.value == pytest.approx(1 / 3) and est.lo == est.hi == pytest.approx(1 / 3)  # no spread within tiers
    with pytest.raises(ValueError, match=r"tiers \['expert'\] are absent"):
        reweighted(cell, "m", {"easy": 1, "expert": 1})


def test_dense_sample_ranks_the_encoded_sample_and_fills_the_dense_rows(demo_catalog, tmp_path):
    import numpy as np

    from toolsense.catalog import load_demo_queries
    from toolsense.models.encoders import SentenceEncoder
    from toolsense.paper.dense import extrapolated_rc50, sample_cells, sample_est, sample_section
    from toolsense.paper.page import Grid, paper_rows_table

    queries = [q for q in load_demo_queries() if set(q.tools) <= set(demo_catalog.names)][:8]
    gold = {t for q in queries for t in q.tools}
    names = sorted(gold) + [n for n in demo_catalog.names if n not in gold][:20]
    raw = SentenceEncoder().encode([demo_catalog[n].text() for n in names])
    emb = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    s = sample_cells(demo_catalog, {"G1": queries[:4], "rrb": queries[4:]}, names, emb, gold, "tool_text")
    assert (s["n_tools"], s["n_distractors"], s["n_catalog"]) == (len(names), 20, len(demo_catalog))

    q = SentenceEncoder().encode([x.text for x in queries[:4]])
    sims = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ emb.T  # the sample's cosine ranking, by hand
    for i, x in enumerate(queries[:4]):
        top1 = names[int(np.argmax(sims[i]))]
        assert s["cells"]["G1"]["dense"]["Rc@1"][i] == float(top1 in x.tools), (x.query_id, top1)
    sample = {"dense": s}
    d = sample_est(sample, "dense", "G1", "dense", "Rc@5", minus="bm25")
    assert d.value == pytest.approx(np.mean(s["cells"]["G1"]["dense"]["Rc@5"]) - np.mean(s["cells"]["G1"]["bm25"]["Rc@5"]))
    assert sample_est(sample, "dense_toolgen", "G1", "dense", "Rc@5") is None

    grid = Grid(tmp_path, SETTINGS, ["G1", "rrb"])  # nothing run on the full catalog
    rows = paper_rows_table(grid, sample)
    share = round(100 * 20 / (len(demo_catalog) - len(gold)))
    x = extrapolated_rc50(sample, "dense", "dense", "G1")
    assert [r["n_distractors"] for r in s["curve"]] == [5, 10] and 0 <= s["curve"][0]["dense"]["G1"] <= 1
    assert "| te3l (ours: MiniLM) | G1 (474 solvable queries) | 47.0 | " in rows
    assert f"with {share}% of the non-gold tools; ≈ {100 * x:.1f} extrapolated to all | — |" in rows
    assert "| BM25 | G1 (474 solvable queries) | 27.8 | — | — | not run |" in rows
    section = sample_section(sample, {})
    assert f"{len(names):,} of {len(demo_catalog):,} tools" in section and "(full: —)" in section
    assert f"| {len(demo_catalog) - len(gold):,} (extrapolated) |" in section


def test_extrapolation_is_log_linear_in_the_non_gold_tools():
    from toolsense.paper.dense import extrapolate

    assert extrapolate([(1, 0.9), (2, 0.8), (4, 0.7)], 16) == pytest.approx(0.5)  # -0.1 per doubling, two more
    assert extrapolate([(10, 0.9), (40, 0.7)], 40) == pytest.approx(0.7)
    assert extrapolate([(10, 0.9), (40, 0.7)], 160) == pytest.approx(0.5)  # the last step spans two doublings


def test_a_fully_encoded_catalog_is_said_measured_and_the_search_column_is_said_a_search(tmp_path):
    """Where every tool is encoded the dense section speaks of the full catalog, measured (no sample,
    no extrapolated row), and the paper's rows say their last column searched up to 18 cells a row."""
    from toolsense.paper.dense import FULL_INTRO, SAMPLE_INTRO, intro, is_full, sample_section
    from toolsense.paper.page import paper_rows_table

    items = {"Rc@50": [1.0, 1.0, 0.0, 1.0], "Rc@5": [1.0, 0.0, 0.0, 1.0], "ToolGen NDCG@5": [0.5, 0.0, 0.0, 1.0]}
    cells = {b: {sys_: items for sys_ in ("dense", "bm25", "bm25_toolgen")} for b in ("G1", "rrb")}
    curve = [{"n_distractors": n, "dense": {"G1": v, "rrb": v}, "bm25": {"G1": v, "rrb": v}} for n, v in ((25, 0.9), (50, 0.8))]
    full = {"dense": {"document": "tool_text", "n_gold": 10, "n_distractors": 100, "n_catalog": 110, "n_tools": 110,
                      "cells": cells, "curve": curve}}
    assert is_full(full) and intro(full) == FULL_INTRO and "uniform random" not in FULL_INTRO and "upper estimate" not in FULL_INTRO
    section = sample_section(full, {})
    assert "on the full catalog: all 110 tools (10 gold tools + 100 others):" in section
    assert "| 100 (measured: the full catalog) | 75.0 | 75.0 | 75.0 | 75.0 |" in section
    assert "extrapolated" not in section and "not encoded" not in section and "same catalog" in section
    assert "catalog size: measured on the full catalog (Rc@50 75.0; no extrapolation)" in section
    part = {"dense": {**full["dense"], "n_catalog": 210}}  # half the others encoded: a sample, extrapolated
    assert not is_full(part) and intro(part) == SAMPLE_INTRO and "| 200 (extrapolated) |" in sample_section(part, {})
    rows = paper_rows_table(Grid(tmp_path, SETTINGS, ["G1", "rrb"]))
    assert "holds the paper's number (a search: below) |" in rows
    assert "per row it tries up to 18 (setting, metric) cells (3 settings × 6 metrics), so some 95% interval" in rows
