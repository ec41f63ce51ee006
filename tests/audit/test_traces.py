import json

import pytest

from toolsense.audit.generator import TOOLS, GeneratorConfig, generate_traces
from toolsense.audit.traces import load_traces
from toolsense.utils.io import DataError


def _write(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


GOOD = {"id": "a", "label": 1, "cluster": 0, "question": "q?", "tools": [{"tool": "x", "text": "hello"}, {"tool": "y", "text": "w"}]}


@pytest.mark.parametrize("bad, message", [
    ("{not json", "malformed JSON"),
    ({**GOOD, "label": 2}, "field 'label' must be 0 or 1, got 2"),
    ({**GOOD, "cluster": None}, "field 'cluster' is missing or not a scalar"),
    ({**GOOD, "tools": "x"}, "field 'tools' must be a list"),
    ({**GOOD, "tools": [{"tool": "x"}]}, "field 'tools[0].text' is missing or not a string"),
    ({**GOOD, "tools": [{"tool": "x", "text": "t"}, {"text": "t"}]}, "field 'tools[1].tool' is missing"),
    ({k: v for k, v in GOOD.items() if k != "question"}, "prompt field 'question' is missing"),
    ({**GOOD, "id": "a"}, "duplicate id 'a' (first at line 1)"),
])
def test_malformed_records_name_file_line_and_field(tmp_path, bad, message):
    path = _write(tmp_path / "t.jsonl", [GOOD, bad])
    with pytest.raises(DataError) as e:
        load_traces(path, prompt_fields=["question"])
    assert f"{path}:2: " in str(e.value)
    assert message in str(e.value)


def test_missing_tool_is_an_empty_section_or_an_explicit_error(tmp_path):
    other = {"id": "b", "label": 0, "cluster": 1, "question": "q", "tools": [{"tool": "x", "text": "only x"}]}
    path = _write(tmp_path / "t.jsonl", [GOOD, other])
    ts = load_traces(path, prompt_fields=["question"])
    assert ts.tools == ["x", "y"]
    assert ts.sections("y") == ["w", ""]
    assert ts.concatenated() == ["hello\nw", "only x\n"]
    with pytest.raises(DataError, match=r"t.jsonl:2: record 'b' has no result from tool\(s\) \['y'\]"):
        load_traces(path, prompt_fields=["question"], on_missing_tool="error")
    with pytest.raises(DataError, match=r"t.jsonl:1: tool 'y' is not in data.tools \['x'\]"):
        load_traces(path, prompt_fields=["question"], tools=["x"])


def test_split_errors_name_the_problem(tmp_path):
    path = _write(tmp_path / "t.jsonl", [GOOD, {**GOOD, "id": "b", "cluster": 1, "label": 0}])
    ts = load_traces(path)
    with pytest.raises(DataError, match=r"fit partition\(s\) \['7'\] not present"):
        ts.split(["7"], None)
    with pytest.raises(DataError, match="the fit partition needs both labels"):
        ts.split(["0"], None)


def test_generator_plants_the_shortcut_at_the_requested_strength():
    ts = generate_traces(GeneratorConfig(n_fit=400, n_eval_per_cluster=0, n_eval_clusters=0, strength=0.8, seed=3))
    assert ts.tools == TOOLS and len(ts) == 400
    agree = [("KT-" in r.section("list_files")) == bool(r.label) for r in ts.records]
    assert 0.75 < sum(agree) / len(agree) < 0.85
    dup = generate_traces(GeneratorConfig(n_fit=10, n_eval_per_cluster=0, n_eval_clusters=0, duplicate_in="fetch_logs"))
    for r in dup.records:
        planted = r.section("list_files").split("; ")[1]
        assert planted in r.section("fetch_logs")
    with pytest.raises(ValueError, match="generator.duplicate_in='nope' is not one of"):
        GeneratorConfig(duplicate_in="nope")
