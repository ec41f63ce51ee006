"""Stage-1 formats on a hand-built 5-tool catalog: exact prompts, completions and counts."""

from __future__ import annotations

import numpy as np
import pytest

from toolsense.catalog import Catalog, Tool
from toolsense.data.memorization import MEMORIZATION_FORMATS, MemorizationConfig, build_memorization_examples, check_formats
from toolsense.data.memorization.mcts import hard_negatives
from toolsense.index import build_index


@pytest.fixture(scope="module")
def catalog():
    tools = [
        Tool.from_name("Weather&&current", api_description="Current weather for a city."),
        Tool.from_name("Weather&&forecast", api_description="Five-day forecast."),
        Tool.from_name("Maps&&route", api_description="Driving route between two places."),
        Tool.from_name("Maps&&geocode", api_description="Coordinates of an address."),
        Tool.from_name("News&&headlines", api_description="Top headlines."),
    ]
    return Catalog.from_tools((t, f"test:{i}") for i, t in enumerate(tools))


def by_kind(examples, kind):
    return [e for e in examples if e.kind == kind]


def test_desc2tok_and_tok2desc_pairs(catalog):
    index = build_index(catalog, "flat")
    ex = build_memorization_examples(catalog, index, MemorizationConfig(formats=["desc2tok", "tok2desc"]))
    d2t, t2d = by_kind(ex, "desc2tok"), by_kind(ex, "tok2desc")
    assert len(d2t) == len(t2d) == 5
    e = next(x for x in d2t if x.tool == "Maps&&route")
    assert e.messages == ({"role": "user", "content": catalog["Maps&&route"].text()},)
    assert e.completion == "<<Maps&&route>>" and e.eos
    e = next(x for x in t2d if x.tool == "News&&headlines")
    assert e.messages[-1]["content"] == "What does the tool <<News&&headlines>> do?"
    assert e.completion == "News / headlines: Top headlines."


def test_system_prompt_switch(catalog):
    index = build_index(catalog, "flat")
    on = build_memorization_examples(catalog, index, MemorizationConfig(use_system_prompt=True, system_prompt="SYS"))
    off = build_memorization_examples(catalog, index, MemorizationConfig(use_system_prompt=False, system_prompt="SYS"))
    assert all(e.messages[0] == {"role": "system", "content": "SYS"} for e in on)
    assert all(e.messages[0]["role"] == "user" for e in off)


def test_hard_negatives_are_nearest_by_cosine():
    emb = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9], [0.7, 0.7]], dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    neg = hard_negatives(emb, 2)
    assert neg.tolist() == [[1, 4], [0, 4], [3, 4], [2, 4], [1, 3]]
    assert hard_negatives(emb, 10).shape == (5, 4)  # K capped at n-1, never the tool itself


def test_mcts_candidates_gold_plus_k_shuffled(catalog, monkeypatch):
    from toolsense.data.memorization import mcts

    # Stand-in embeddings: Weather tools close, Maps tools close, News apart.
    emb = np.array([[1, 0, 0], [0.95, 0.05, 0], [0, 1, 0], [0, 0.95, 0.05], [0, 0, 1]], dtype=np.float32)
    monkeypatch.setattr(mcts, "tool_embeddings", lambda cat, enc: emb / np.linalg.norm(emb, axis=1, keepdims=True))
    index = build_index(catalog, "flat")
    cfg = MemorizationConfig(formats=["mcts"], mcts_negatives=2)
    ex = build_memorization_examples(catalog, index, cfg)
    e = next(x for x in ex if x.tool == "Weather&&current")
    assert sorted(e.meta["candidates"]) == ["Maps&&route", "Weather&&current", "Weather&&forecast"]  # ties -> lowest index
    assert e.completion == "<<Weather&&current>>"
    listed = e.messages[-1]["content"].split("\n")[-3:]
    assert listed == [f"<<{c}>>" for c in e.meta["candidates"]]
    again = build_memorization_examples(catalog, index, cfg)
    assert [x.meta["candidates"] for x in again] == [x.meta["candidates"] for x in ex]  # seeded


def test_hier_next_one_example_per_depth(catalog):
    index = build_index(catalog, "structural")
    ex = build_memorization_examples(catalog, index, MemorizationConfig(formats=["hier_next"]))
    mine = sorted((e for e in ex if e.tool == "Maps&&geocode"), key=lambda e: e.meta["depth"])
    assert [(e.assistant_prefix, e.completion, e.eos) for e in mine] == [
        ("", "<<S:Maps>>", False), ("<<S:Maps>>", "<<A:Maps&&geocode>>", True)]
    assert len(ex) == 10


def test_hier_node_lists_what_is_below(catalog):
    index = build_index(catalog, "structural")
    ex = build_memorization_examples(catalog, index, MemorizationConfig(formats=["hier_node"]))
    got = {e.meta["node"]: e.completion for e in ex}
    assert got == {"<<S:Weather>>": "Weather: current, forecast", "<<S:Maps>>": "Maps: route, geocode", "<<S:News>>": "News: headlines"}


def test_hierarchical_formats_refuse_flat_index(catalog):
    with pytest.raises(ValueError, match=r"memorization.formats: 'hier_node' needs a hierarchical index"):
        check_formats(["desc2tok", "hier_node"], "flat")
    with pytest.raises(ValueError, match=r"memorization.formats: unknown format 'bogus'"):
        check_formats(["bogus"], "flat")
    assert set(MEMORIZATION_FORMATS.names()) == {"desc2tok", "tok2desc", "mcts", "hier_next", "hier_node"}


def test_format_epochs_repeat_or_subsample_one_format(catalog):
    """memorization.format_epochs: 2 passes over tok2desc, 0.4 of desc2tok (2 of 5 tools, seeded);
    no entry = each format once, in the same order as without the option."""
    index = build_index(catalog, "flat")
    plain = build_memorization_examples(catalog, index, MemorizationConfig(formats=["desc2tok", "tok2desc"]))
    cfg = MemorizationConfig(formats=["desc2tok", "tok2desc"], format_epochs={"tok2desc": 2, "desc2tok": 0.4})
    ex = build_memorization_examples(catalog, index, cfg)
    t2d, d2t = by_kind(ex, "tok2desc"), by_kind(ex, "desc2tok")
    assert len(t2d) == 10 and sorted(e.tool for e in t2d) == sorted(2 * catalog.names)
    assert len(d2t) == 2 and len({e.tool for e in d2t}) == 2
    assert build_memorization_examples(catalog, index, cfg) == ex  # seeded
    assert build_memorization_examples(catalog, index, MemorizationConfig(formats=["desc2tok", "tok2desc"], format_epochs={})) == plain
    with pytest.raises(ValueError, match=r"^memorization.format_epochs.mcts: 'mcts' is not in memorization.formats"):
        MemorizationConfig(formats=["desc2tok"], format_epochs={"mcts": 1.0})
