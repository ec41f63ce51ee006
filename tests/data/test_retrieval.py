"""Stage-2 sources and examples, and tokenization with completion-only masks."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolsense.catalog import Catalog, Query, Tool, load_catalog
from toolsense.data import Example, QuerySource, load_queries, load_toolgen_retrieval, retrieval_examples, tokenize_example
from toolsense.data.prompts import PromptConfig
from toolsense.index import add_index_tokens, build_index
from toolsense.utils.io import DataError

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "training"


def test_toolgen_retrieval_json_both_turn_styles():
    qs = load_toolgen_retrieval(ASSETS / "toolgen_retrieval.json")
    assert [(q.query_id, q.text, q.tools) for q in qs] == [
        ("g1", "What is the weather in Paris right now?", ("SkyCast Weather&&current_weather",)),
        ("2", "Radar map of rain near Oslo", ("OpenWeatherHub&&precipitation_radar",)),
    ]


def test_toolgen_bad_answer_names_item():
    with pytest.raises(DataError, match=r"toolgen_bad.json: item 2: assistant answer 'SkyCast Weather' is not a <<Service&&API>> token"):
        load_toolgen_retrieval(ASSETS / "toolgen_bad.json")


def test_sources_jsonl_split_and_style_filters():
    all_q = load_queries([QuerySource("jsonl", str(ASSETS / "queries.jsonl"), split=None)])
    train = load_queries([QuerySource("jsonl", str(ASSETS / "queries.jsonl"), split="train", style="short")])
    assert len(all_q) == 16 and 0 < len(train) < 16
    assert all(q.split == "train" and q.style == "short" for q in train)
    with pytest.raises(ValueError, match="stage2.sources: a 'toolgen' source needs a path"):
        load_queries([QuerySource("toolgen")])


def test_toolbench_source_reads_relevant_apis(shared_data):
    qs = load_queries([QuerySource("toolbench", str(shared_data / "toolbench_queries" / "G1_instruction.json"), split=None)])
    assert len(qs) == 163 and all(q.tools for q in qs)


@pytest.fixture
def small():
    cat = Catalog.from_tools((Tool.from_name(n), f"t:{i}") for i, n in enumerate(["A&&x", "A&&y", "B&&z"]))
    return cat, build_index(cat, "flat")


def test_multi_tool_split_or_joint(small):
    cat, index = small
    q = Query("q1", "do x and z", ("A&&x", "B&&z"))
    split = retrieval_examples([q], index, PromptConfig(use_system_prompt=False))
    assert [(e.completion, e.tool) for e in split] == [("<<A&&x>>", "A&&x"), ("<<B&&z>>", "B&&z")]
    assert split[0].messages == ({"role": "user", "content": "do x and z"},)
    joint = retrieval_examples([q], index, PromptConfig(system_prompt="S"), multi_tool="joint")
    assert [e.completion for e in joint] == ["<<A&&x>><<B&&z>>"]
    assert joint[0].messages[0] == {"role": "system", "content": "S"}


def test_unknown_gold_tool_errors_or_skips(small):
    _, index = small
    q = Query("q7", "?", ("A&&x", "C&&nope"))
    with pytest.raises(ValueError, match=r"stage2: query 'q7' names tools not in the catalog \(\['C&&nope'\]\)"):
        retrieval_examples([q], index, PromptConfig())
    assert [e.tool for e in retrieval_examples([q], index, PromptConfig(), on_unknown_tool="skip")] == ["A&&x"]


def test_tokenize_marks_only_completion_and_eos(tiny_model):
    model, tok = tiny_model
    cat = load_catalog(ASSETS / "tools.jsonl")
    index = build_index(cat, "flat")
    add_index_tokens(index, model, tok)
    ex = Example(({"role": "user", "content": "weather now"},), "<<SkyCast Weather&&current_weather>>", "retrieval")
    out = tokenize_example(ex, tok, 1024)
    comp = [t for t, m in zip(out["input_ids"], out["completion_mask"]) if m]
    assert comp == [tok.convert_tokens_to_ids("<<SkyCast Weather&&current_weather>>"), tok.eos_token_id]
    prompt = tok.decode([t for t, m in zip(out["input_ids"], out["completion_mask"]) if not m])
    assert prompt == "<|im_start|>user\nweather now<|im_end|>\n<|im_start|>assistant\n"
    cut = tokenize_example(ex, tok, 5)  # prompt cut from the left, completion kept whole
    assert len(cut["input_ids"]) == 5 and cut["input_ids"][-2:] == comp and cut["completion_mask"] == [0, 0, 0, 1, 1]
    nxt = tokenize_example(Example(ex.messages, "<<S:x>>", "hier_next", assistant_prefix="", eos=False), tok, 1024)
    assert nxt["completion_mask"][-1] == 1 and nxt["input_ids"][-1] != tok.eos_token_id


def test_generated_source_reads_rrb_records(shared_data):
    """Generated realistic queries come in the RRB format: ``tool`` is a dict, or a list when several answer."""
    qs = load_queries([QuerySource("generated", str(shared_data / "samples" / "rrb_sample.jsonl"), split=None)])
    assert len(qs) == 24
    assert qs[0].text == "Show me the most recently posted job openings" and qs[0].tools == ("JobSearch&&api/v2/Jobs/Latest",)
    assert any(len(q.tools) > 1 for q in qs)
