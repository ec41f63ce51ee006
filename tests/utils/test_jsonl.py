"""JsonlStore: a kill at any byte leaves a file that reopens; real corruption is named, not hidden."""

import json
import logging
import threading

import pytest

from toolsense.utils.io import DataError
from toolsense.utils.jsonl import JsonlStore


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_torn_last_line_is_cut_with_one_warning(tmp_path, caplog):
    p = tmp_path / "a.jsonl"
    _write(p, [{"i": 0}, {"i": 1}])
    with open(p, "a") as f:
        f.write('{"i": 2, "te')  # killed mid-write
    with caplog.at_level(logging.WARNING):
        store = JsonlStore(p)
    assert [r["i"] for r in store] == [0, 1] and store.cut_bytes == len('{"i": 2, "te')
    assert p.read_text() == '{"i": 0}\n{"i": 1}\n'  # the file is repaired, so appends start on a fresh line
    assert sum("torn last line" in r.message for r in caplog.records) == 1
    store.append({"i": 2})
    assert [r["i"] for r in JsonlStore(p)] == [0, 1, 2]


def test_nul_padded_tail_and_unparseable_complete_last_line_are_cut(tmp_path):
    p = tmp_path / "b.jsonl"
    _write(p, [{"i": 0}])
    with open(p, "ab") as f:
        f.write(b"\x00" * 4096)  # a file system that extended the file before the data landed
    assert [r["i"] for r in JsonlStore(p)] == [0] and p.read_bytes() == b'{"i": 0}\n'
    with open(p, "ab") as f:
        f.write(b'{"i": 1\x00\x00\n')
    assert [r["i"] for r in JsonlStore(p)] == [0] and p.read_bytes() == b'{"i": 0}\n'


def test_corruption_before_the_last_line_names_file_and_line(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"i": 0}\n{oops\n{"i": 2}\n')
    with pytest.raises(DataError, match=r"c\.jsonl:2: malformed JSON"):
        JsonlStore(p)
    assert p.read_text() == '{"i": 0}\n{oops\n{"i": 2}\n'  # nothing is changed
    p.write_text('{"i": 0}\n[1, 2]\n{"i": 2}\n')
    with pytest.raises(DataError, match=r"c\.jsonl:2: expected a JSON object, got list"):
        JsonlStore(p)


def test_concurrent_appends_keep_lines_whole(tmp_path):
    store = JsonlStore(tmp_path / "d.jsonl")

    def work(k):
        for i in range(200):
            store.append({"k": k, "i": i, "pad": "x" * 500})

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    again = JsonlStore(tmp_path / "d.jsonl")
    assert len(again) == 800 and again.cut_bytes == 0
    assert sorted((r["k"], r["i"]) for r in again) == [(k, i) for k in range(4) for i in range(200)]


def test_malformed_json_reads_once_at_column(tmp_path):
    """The message used to read "... starting at at column 7" (issue 21): json's reasons
    "Unterminated string starting at" / "Invalid control character at" already end in "at"."""
    from toolsense.utils.io import iter_jsonl, load_json

    p = tmp_path / "m.jsonl"
    p.write_text('{"i": 0}\n{"q": "unterminated\n{"i": 2}\n')
    with pytest.raises(DataError) as store:
        JsonlStore(p)  # reads lines without their newline: the string runs to the end of the line
    with pytest.raises(DataError) as lines:
        list(iter_jsonl(p))  # keeps the newline: a control character inside the string
    j = tmp_path / "m.json"
    j.write_text('[1,\n {"q": }]')
    with pytest.raises(DataError) as whole:
        load_json(j)
    assert str(store.value).endswith("m.jsonl:2: malformed JSON (Unterminated string starting at column 7); "
                                     "only a torn last line is repaired automatically")
    assert str(lines.value).endswith("m.jsonl:2: malformed JSON (Invalid control character at column 20)")
    assert str(whole.value).endswith("m.json:2: malformed JSON (Expecting value at column 8)")


def test_unique_store_refuses_a_key_twice_even_from_another_writer(tmp_path):
    from toolsense.utils.jsonl import DuplicateKey

    p = tmp_path / "s.jsonl"
    a = JsonlStore(p, key="item_id", unique=True)
    b = JsonlStore(p, key="item_id", unique=True)  # a second writer opened before a wrote anything
    a.append({"item_id": "q1", "v": 1})
    with pytest.raises(DuplicateKey, match=r"s\.jsonl: already holds a row with key 'q1'"):
        a.append({"item_id": "q1", "v": 2})
    with pytest.raises(DuplicateKey, match="'q1'"):
        b.append({"item_id": "q1", "v": 3})  # b learns of a's row when it appends
    b.append({"item_id": "q2", "v": 4})
    a.append({"item_id": "q1", "v": 5}, replace=True)  # a deliberate rescoring supersedes
    rows = [json.loads(x) for x in p.read_text().splitlines()]
    assert [(r["item_id"], r["v"]) for r in rows] == [("q1", 1), ("q2", 4), ("q1", 5)]
    assert JsonlStore(p, key="item_id").get("q1")["v"] == 5 and set(a.by_key) == {"q1", "q2"}
    with pytest.raises(ValueError, match="needs a key"):
        JsonlStore(p, unique=True)
    plain = JsonlStore(p, key="item_id")  # stores that are not unique keep "a later row wins"
    plain.append({"item_id": "q2", "v": 6})
    assert plain.get("q2")["v"] == 6


def test_bytes_that_are_not_utf8_are_named_by_file_and_line_in_every_reader(tmp_path):
    """Catalogs, benchmarks, traces and samples read through the shared readers: a Latin-1 byte on
    line 2 is named ``file:2`` with its column, and the store cuts nothing (it is data, not a torn write)."""
    from toolsense.audit.traces import load_traces
    from toolsense.catalog.loaders import load_catalog
    from toolsense.catalog.queries import load_query_jsonl
    from toolsense.utils.io import load_json

    p = tmp_path / "x.jsonl"
    p.write_bytes(b'\n{"tool_name": "S&&b", "query": "caf\xe9", "tools": ["S&&a"], "id": "2"}\n')  # line 1 blank
    wanted = rf"{p}:2: not UTF-8 text \(byte 0xe9 at column 36\)"
    for read in (lambda: load_catalog(p, "toolsense"), lambda: load_query_jsonl(p), lambda: load_traces(p),
                 lambda: JsonlStore(p)):
        with pytest.raises(DataError, match=wanted):
            read()
    assert p.read_bytes().endswith(b'"id": "2"}\n')  # not cut
    j = tmp_path / "x.json"
    j.write_bytes(b'[{"a": 1},\n {"b": "caf\xe9"}]')
    with pytest.raises(DataError, match=rf"{j}:2: not UTF-8 text \(byte 0xe9 at column 12\)"):
        load_json(j)
