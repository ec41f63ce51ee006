"""stage2=realistic_template: App. E's realistic-style training queries written by templates from any catalog:
every tool twice, no API wording, seeded, and no copy of a released RRB test item."""

import json
import re
from pathlib import Path

import pytest

from toolsense.catalog import Tool, load_query_jsonl
from toolsense.catalog.tool import fold_text
from toolsense.data.leakage import QuerySet, normalise_query, overlap
from toolsense.data.realistic import BANNED, PER_TOOL, ensure_written, generate, goal, main, tool_queries
from toolsense.data.sources import QuerySource, load_query_sets
from toolsense.data.verbose import generate as verbose_generate

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def test_goal_drops_api_wording_and_keeps_the_task():
    tool = Tool.from_name("Box&&getFileComments", tool_title="Box", api_title="getFileComments",
                          api_description="This endpoint returns all of the comments on a file. Needs a JWT.")
    assert goal(tool) == "get all of the comments on a file"
    qs = tool_queries(tool, seed=0)
    assert len(qs) == PER_TOOL == 2 and len(set(qs)) == 2
    for q in qs:
        assert "getFileComments" not in q and "endpoint" not in q.lower() and "get all of the comments on a file" in q
    odd = Tool.from_name("S&&/api/v1/Customer_list", api_title="/api/v1/Customer_list",
                         api_description="Returns the customer_id and JSON payload of Customers via the API.")
    g = goal(odd)
    assert not {w.lower().strip(".,") for w in g.split()} & BANNED and "customer_id" not in g and g.startswith("get ")
    bare = Tool.from_name("Lottery&&getThaiLotteryNews", api_title="getThaiLotteryNews")  # no text: the title's words
    assert goal(bare) == "get thai lottery news"
    assert goal(Tool.from_name("X&&123")) == "find x"  # a digits-only API title: the service title's words
    assert tool_queries(Tool.from_name("9&&123"), seed=0) == []  # nothing usable at all: no query rather than a bad one


def test_every_tool_twice_seeded_and_stable_when_tools_are_added(demo_catalog):
    qs = generate(demo_catalog, seed=0)
    names = {t.name for t in demo_catalog}
    assert len(qs) == PER_TOOL * len(names) and {q.tools[0] for q in qs} == names  # the coverage of verbose's train split
    assert {q.tools[0] for q in verbose_generate(demo_catalog) if q.split == "train"} == names
    assert all(q.split == "train" and q.style == "short" and len(q.text.split()) <= 30 for q in qs)
    assert [q.text for q in generate(demo_catalog, seed=0)] == [q.text for q in qs]
    assert {q.text for q in generate(demo_catalog, seed=1)} != {q.text for q in qs}
    first = list(demo_catalog)[0]
    assert tool_queries(first, 0) == [q.text for q in sorted(generate([first], 0), key=lambda q: q.query_id)]
    # realistic-style, not verbose: no API or service name of the tool in most queries (the verbose ones always name both)
    named = sum(t.api_title.lower() in q.lower() for t in demo_catalog for q in tool_queries(t) if len(t.api_title) >= 4)
    assert named <= 0.15 * len(qs)


def test_the_source_writes_the_cache_once_and_names_its_file(tmp_path, monkeypatch, demo_catalog):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path))
    [qs] = load_query_sets([QuerySource(kind="realistic_template", path=None, split="train")])
    assert qs.files == (str(tmp_path / "realistic" / "demo.jsonl"),) and len(qs.queries) == 2 * len(list(demo_catalog))
    mtime = Path(qs.files[0]).stat().st_mtime_ns
    assert ensure_written(None) == Path(qs.files[0]) and Path(qs.files[0]).stat().st_mtime_ns == mtime
    with pytest.raises(FileNotFoundError, match="realistic queries need the catalog file .*nope.jsonl"):
        ensure_written(str(tmp_path / "nope.jsonl"))
    assert main(["demo", "--out", str(tmp_path / "o.jsonl")]) == 0
    assert len(load_query_jsonl(tmp_path / "o.jsonl")) == len(qs.queries)


@pytest.mark.skipif(not (SHARED / "released" / "rrb_dev.jsonl").is_file(), reason="../shared/data/released/ absent")
def test_no_released_rrb_item_is_copied(tmp_path, monkeypatch):
    """The study catalog's realistic template queries against the 243 released RRB dev items (the study's realistic
    test set): no equal normalised text (train.py's leakage rule), and no near-copy (word Jaccard < 0.6)."""
    from toolsense.catalog import load_catalog

    catalog = load_catalog(SHARED / "catalogs" / "toolsense_release.jsonl")
    rrb = [json.loads(line)["query"] for line in (SHARED / "released" / "rrb_dev.jsonl").read_text().splitlines() if line.strip()]
    gold = {t.get("tool_name") if isinstance(t, dict) else t for line in (SHARED / "released" / "rrb_dev.jsonl").read_text().splitlines()
            if line.strip() for t in json.loads(line)["tool"]}
    tools = [t for t in catalog if t.raw_name in gold or t.name in gold]
    assert len(tools) >= 600
    qs = generate(tools)
    assert len(qs) >= 2 * len(tools) - 10
    from toolsense.catalog import Query

    test = QuerySet("benchmarks.realistic", ("rrb_dev.jsonl",), [Query(f"r{i}", q, ("x",), "short", "test") for i, q in enumerate(rrb)])
    assert overlap(QuerySet("stage2.sources.0", ("realistic.jsonl",), qs), test) is None
    words = lambda s: set(normalise_query(s).split())  # noqa: E731
    rrb_words = [words(q) for q in rrb]
    worst = max(len(words(q.text) & r) / len(words(q.text) | r) for q in qs for r in rrb_words)
    assert worst < 0.6, worst
    assert not [q for q in qs if re.search(r"\b(endpoint|parameters?)\b", q.text, re.I)]
    assert fold_text(qs[0].text)
