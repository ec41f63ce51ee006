"""catalog=study_tools_tb: the gold tools of real ToolBench queries added to the study's catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolsense.catalog import Query
from toolsense.catalog.study_toolbench import select_queries
from toolsense.catalog.tool import loose_key

DATA = Path(__file__).resolve().parents[2].parent / "shared/data"


def _q(qid: str, *tools: str) -> tuple[str, Query]:
    return "G1_tool", Query(qid, f"query {qid}", tuple(tools))


def test_queries_enter_whole_fewest_new_tools_first_within_the_budget():
    queries = [_q("a", "S&&x", "S&&y", "S&&z"), _q("b", "S&&x"), _q("c", "Café&&m"), _q("d", "T&&q", "T&&r"),
               _q("e", "U&&gone")]
    have = {loose_key("Cafe&&m"): "Cafe&&m"}  # in the catalog already, under an unaccented name
    known = {"S&&x", "S&&y", "S&&z", "T&&q", "T&&r", "Café&&m"}  # "U&&gone" has no record: never covered
    covered, new = select_queries(queries, have, known, budget=3, seed=0)
    ids = [q.query_id for _, q, _ in covered]
    # c needs nothing new, b one tool; then a and d need two each (the seeded order picks a): 3 tools, the budget
    assert ids == ["c", "b", "a"] and new == ["S&&x", "S&&y", "S&&z"]
    assert [g for _, q, g in covered if q.query_id == "c"] == [("Cafe&&m",)]  # mapped to the catalog's name
    covered, new = select_queries(queries, have, known, budget=10, seed=0)
    assert {q.query_id for _, q, _ in covered} == {"a", "b", "c", "d"} and len(new) == len(set(new)) == 5


@pytest.mark.slow  # builds the 46,984-tool catalog (~50 s)
@pytest.mark.skipif(not (DATA / "toolbench_queries").is_dir(), reason="../shared/data is absent")
def test_the_built_catalog_covers_its_toolbench_queries(tmp_path, monkeypatch):
    """Builds study_tools_tb (and the 46,984-tool catalog it takes records from) into a temporary cache."""
    from toolsense.catalog import load_catalog, load_query_jsonl
    from toolsense.catalog.study_toolbench import build_study_tools_tb_catalog, toolbench_path
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path))
    out = tmp_path / "study_tools_tb.jsonl"
    cov = build_study_tools_tb_catalog(DATA, out, n_toolbench=40)
    cat = load_catalog(out)
    qs = load_query_jsonl(toolbench_path(out))
    assert len(cat) == 1040 and cov["sources"]["toolbench_gold"] == 40 and cov["toolbench"]["covered"] == len(qs) > 20
    assert all(t in cat for q in qs for t in q.tools) and {q.meta["tier"] for q in qs} <= {"G1", "G2", "G3"}
    assert json.loads((tmp_path / "study_tools_tb.coverage.json").read_text())["n_tools"] == 1040
