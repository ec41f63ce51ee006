import json
from pathlib import Path

import pytest

from toolsense.catalog import load_catalog, load_query_jsonl
from toolsense.evaluation.baselines import build_baseline
from toolsense.evaluation.config import BaselineConfig
from toolsense.evaluation.outputs import SampleLog, fmt, markdown_table

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "evaluation"


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_baselines_rank_the_obvious_tool_first(kind):
    cat = load_catalog(ASSETS / "tools.jsonl")
    queries = load_query_jsonl(ASSETS / "queries.jsonl")
    ranker = build_baseline(cat, BaselineConfig(kind=kind, batch_size=3), top=50)
    out = {r.query.query_id: r for r in ranker.run(queries)}
    assert len(out) == len(queries)
    assert all(len(r.constrained) == 12 for r in out.values())  # top = min(50, catalog size)
    assert out["q5"].constrained[0]["tool"] == "Translate It&&Translate"
    assert out["q6"].constrained[0]["tool"] == "Café Finder&&Nearby cafés"  # canonical name = as written (ToolGen tokens keep accents)
    scores = [x["score"] for x in out["q5"].constrained]
    assert scores == sorted(scores, reverse=True)


def test_openai_baseline_needs_key_from_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        build_baseline(load_catalog(ASSETS / "tools.jsonl"), BaselineConfig(kind="openai"), 5)


def test_sample_log_resumes_and_drops_a_torn_last_line(tmp_path):
    path = tmp_path / "samples.jsonl"
    with SampleLog(path) as log:
        log.add({"item_id": "a", "v": 1})
        log.add({"item_id": "b", "v": 2})
    with open(path, "a") as f:
        f.write('{"item_id": "c", "v"')  # interrupted mid-write
    with SampleLog(path) as log:
        assert log.done("a") and log.done("b") and not log.done("c")
        log.add({"item_id": "c", "v": 3})
        assert [r["v"] for r in log.ordered(["c", "a", "zz"])] == [3, 1]
    assert [json.loads(x)["item_id"] for x in path.read_text().splitlines()] == ["a", "b", "c"]
    path.write_text('{"item_id": "a"}\nbroken\n{"item_id": "b"}\n')
    with pytest.raises(ValueError, match=r"samples.jsonl:2: malformed samples line"):
        SampleLog(path)


def test_table_formatting():
    assert fmt({"value": 0.5, "lo": 0.25, "hi": 0.75}) == "50.0 [25.0, 75.0]"
    assert fmt({"value": 0.5, "lo": 0.25, "hi": 0.75}, pct=False) == "0.50 [0.25, 0.75]"
    assert fmt(None) == "—"
    assert markdown_table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---|\n| 1 | 2 |\n"
