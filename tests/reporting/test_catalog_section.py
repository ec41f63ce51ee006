"""A study report's naming rates describe the standard queries it scored (#47: the report gave the rates of the
1,200-query split while every finding rested on 250 of them), beside the split's where it is on this machine."""

from __future__ import annotations

import json

from toolsense.reporting.catalog_section import catalog_section

TOOLS = [{"tool_name": "Weather Hub&&Forecast Daily", "tool_title": "Weather Hub", "tool_description": "weather",
          "api_title": "Forecast Daily", "api_description": "daily forecast"},
         {"tool_name": "Currency Pal&&Convert", "tool_title": "Currency Pal", "tool_description": "money",
          "api_title": "Convert", "api_description": "convert an amount"}]


def _catalog(tmp_path):
    path = tmp_path / "cat.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TOOLS))
    (tmp_path / "cat.coverage.json").write_text(json.dumps({"n_tools": 2, "sources": {"rrb_gold": 2}}))
    return path


def test_the_naming_rates_are_those_of_the_scored_queries(tmp_path):
    samples = tmp_path / "samples.jsonl"
    rows = [("use forecast daily for Paris", ["Weather Hub&&Forecast Daily"]),     # names the API
            ("ask weather hub about rain", ["Weather Hub&&Forecast Daily"]),       # names the service
            ("how many euros is 10 dollars", ["Currency Pal&&Convert"]),           # neither
            ("convert with currency pal", ["Currency Pal&&Convert", "Gone&&Tool"])]  # both; a tool not in the catalog
    samples.write_text("".join(json.dumps({"item_id": f"q{i}", "query": q, "gold": g}) + "\n" for i, (q, g) in enumerate(rows))
                       + '{"item_id": "q4", "que')  # a torn last line: skipped
    text = catalog_section({"catalog": {"path": str(_catalog(tmp_path))}}, samples)
    assert "2 tools: 2 are gold or probe tools" in text
    assert "Naming: the 4 scored standard queries name the API in 50.0% and the service in 50.0% of (query, gold) pairs." in text
    assert "test split" not in text  # the verbose split is not on this machine: only what was scored
    bare = catalog_section({"catalog": {"path": str(_catalog(tmp_path))}}, tmp_path / "absent.jsonl")
    assert "Naming" not in bare and "2 tools" in bare


def test_the_split_is_said_to_hold_the_scored_queries_only_where_it_does(tmp_path, monkeypatch):
    """A closed study scored queries of an older generator (study=tools: v1, every query named its answer) while the
    split on this machine is v2's: the report says the split does not hold them, not that they were drawn from it."""
    from toolsense.data.verbose import default_output

    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    cat = _catalog(tmp_path)
    split = default_output(cat)
    split.parent.mkdir(parents=True)
    test = [("use forecast daily for Paris", "Weather Hub&&Forecast Daily"), ("how many euros is 10 dollars", "Currency Pal&&Convert")]
    split.write_text("".join(json.dumps({"query": q, "tools": [t], "split": "test"}) + "\n" for q, t in test)
                     + json.dumps({"query": "train on convert", "tools": ["Currency Pal&&Convert"], "split": "train"}) + "\n")
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"query": test[0][0], "gold": [test[0][1]]}) + "\n")
    text = catalog_section({"catalog": {"path": str(cat)}}, samples)
    assert ("the 1 scored standard queries name the API in 100.0% and the service in 0.0% of (query, gold) pairs; "
            "the whole test split they were drawn from (data/verbose.py v2, 2 queries): 50.0% and 0.0%.") in text
    samples.write_text(json.dumps({"query": "ask weather hub about rain", "gold": [test[0][1]]}) + "\n"
                       + json.dumps({"query": test[1][0], "gold": [test[1][1]]}) + "\n")
    text = catalog_section({"catalog": {"path": str(cat)}}, samples)
    assert ("the standard test split on this machine, which does not hold 1 of the 2 scored queries (another generator "
            "or draw wrote them) (data/verbose.py v2, 2 queries): 50.0% and 0.0%.") in text and "drawn from" not in text
