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
