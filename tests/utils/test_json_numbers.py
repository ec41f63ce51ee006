"""NaN and inf are not JSON: every JSON writer refuses them naming the file and the key, and writes
nothing (issue 45 item 6: ``results.json`` held ``NaN`` after ``metrics.min_hits=nan``)."""

from __future__ import annotations

import math

import pytest

from toolsense.evaluation.outputs import write_json
from toolsense.utils.io import dump_json, write_jsonl
from toolsense.utils.jsonl import JsonlStore


def test_write_json_refuses_nan_naming_the_key_and_writes_nothing(tmp_path):
    path = tmp_path / "results.json"
    with pytest.raises(ValueError, match=rf"^{path}: metrics.Rc@5.ci\[1\]=nan is not a JSON number"):
        write_json(path, {"metrics": {"Rc@5": {"value": 0.5, "ci": [0.4, math.nan]}}})
    assert not path.exists() and list(tmp_path.iterdir()) == []
    write_json(path, {"metrics": {"Rc@5": {"value": 0.5, "ci": [0.4, None]}}})  # a missing value is null
    assert path.read_text().count("null") == 1


def test_jsonl_writers_refuse_inf_and_keep_the_file(tmp_path):
    store = JsonlStore(tmp_path / "samples.jsonl", key="id")
    store.append({"id": "a", "score": 0.5})
    before = store.path.read_bytes()
    with pytest.raises(ValueError, match=r"samples.jsonl: score=inf is not a JSON number"):
        store.append({"id": "b", "score": math.inf})
    assert store.path.read_bytes() == before
    with pytest.raises(ValueError, match=r"out.jsonl row 2: score=-inf is not a JSON number"):
        write_jsonl(tmp_path / "out.jsonl", [{"score": 1.0}, {"score": -math.inf}])


def test_dump_json_passes_finite_numbers_through():
    assert dump_json({"a": [1, 2.5, None]}) == '{"a": [1, 2.5, null]}'
