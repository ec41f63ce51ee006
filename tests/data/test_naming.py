"""data/naming.py: the rates at which ToolBench's G1 queries name their answer, and the verbose
generator drawing its queries at those rates."""

import dataclasses
import json
import random
from pathlib import Path

import pytest

from toolsense.catalog import Tool
from toolsense.data.naming import G1_FILES, TOOLBENCH_G1, content_words, measure, names
from toolsense.data.verbose import generate, naming_case, tool_queries

DATA = Path(__file__).resolve().parents[2].parent / "shared/data/toolbench_queries"


def test_names_is_a_whole_word_run_of_the_folded_text():
    assert names("Use the Transfermarkt-search API now", "Transfermarkt search")
    assert not names("get weather for Paris", "getWeather") and not names("searching", "search")
    assert not names("anything", "  ") and content_words("The API returns the 7-day forecast") == {"day", "forecast"}


def test_measure_counts_pairs_and_queries(tmp_path):
    items = [{"query": "Call the Forecast API of Weather for Paris's city forecast", "relevant APIs": [["Weather", "Forecast"]],
              "api_list": [{"tool_name": "Weather", "api_name": "Forecast", "api_description": "City forecast data",
                            "required_parameters": [{"name": "city"}], "optional_parameters": []}]},
             {"query": "what happened today", "relevant APIs": [["News", "Top"], ["News", "Search"]], "api_list": []}]
    f = tmp_path / "G1_x.json"
    f.write_text(json.dumps(items))
    r = measure([f])
    assert (r.pairs, r.queries, r.both, r.neither) == (3, 2, round(1 / 3, 4), round(2 / 3, 4))
    assert (r.query_api, r.query_service, r.params) == (0.5, 0.5, 1.0)
    assert r.desc_overlap == round(2 / 3, 4)  # "city", "forecast" of {"city", "forecast", "data"}
    f.write_text(json.dumps([{"query": "x"}]))
    with pytest.raises(ValueError, match=r"G1_x\.json: item 0 lacks 'query' or 'relevant APIs'"):
        measure([f])


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/toolbench_queries is absent")
def test_the_shipped_rates_are_the_ones_measured_on_toolbench_g1():
    measured = measure([DATA / f for f in G1_FILES], source=TOOLBENCH_G1.source)
    assert measured == TOOLBENCH_G1
    assert round(100 * TOOLBENCH_G1.api, 1) == 19.0 and round(100 * TOOLBENCH_G1.service, 1) == 12.5


def test_naming_cases_are_drawn_at_the_rates():
    rng = random.Random(0)
    draws = [naming_case(rng, TOOLBENCH_G1) for _ in range(20000)]
    for case in ("both", "api_only", "service_only", "neither"):
        assert abs(draws.count(case) / len(draws) - getattr(TOOLBENCH_G1, case)) < 0.01
    always = dataclasses.replace(TOOLBENCH_G1, both=1.0, api_only=0.0, service_only=0.0, neither=0.0)
    assert {naming_case(rng, always) for _ in range(50)} == {"both"}


def test_generated_queries_name_the_answer_at_about_toolbench_rates_in_every_split():
    """Tools whose description does not contain their names: the query names them only when drawn to."""
    tools = [Tool.from_name(f"Svc{i}&&Op{i}", api_description=f"Returns the record number {i} of the registry.")
             for i in range(1500)]
    qs = generate(tools)
    for split in ("train", "dev", "test"):
        part = [q for q in qs if q.split == split]
        api = sum(names(q.text, q.tools[0].split("&&")[1]) for q in part) / len(part)
        svc = sum(names(q.text, q.tools[0].split("&&")[0]) for q in part) / len(part)
        assert abs(api - TOOLBENCH_G1.api) < 0.035 and abs(svc - TOOLBENCH_G1.service) < 0.035, (split, api, svc)
    assert tool_queries(tools[0], "test") == tool_queries(tools[0], "test")
