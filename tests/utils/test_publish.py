"""A job's result files published together (utils/publish.py): a process killed (SIGKILL) after any
write of a publish leaves a folder whose readers see the old set or the new one, never a mix.
The jobs' own kills (evaluate.py, compare.py) are in tests/comparison/test_publish_jobs.py."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from toolsense.utils.io import DataError
from toolsense.utils.publish import MANIFEST, publish, read_published

ROOT = Path(__file__).resolve().parents[2]

KILL_AFTER = """
import os, signal, sys
from pathlib import Path
n, out = int(sys.argv[1]), Path(sys.argv[2]).resolve()
real, calls = os.replace, [0]
def replace(src, dst, *a, **k):  # every rename into `out` counts; the n-th is followed by kill -9
    real(src, dst, *a, **k)
    if Path(dst).resolve().parent == out:
        calls[0] += 1
        if calls[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
"""
"""Prelude of a subprocess: SIGKILL itself right after the n-th rename into folder argv[2]."""

OLD = {"table.md": "| n |\n| 9 |\n", "results.json": '{"n": 9}', "report.html": "<p>n=9</p>"}
NEW = {"table.md": "| n |\n| 10 |\n", "results.json": '{"n": 10}', "report.html": "<p>n=10</p>"}


def run_killed(n: int, out: Path, code: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", KILL_AFTER + code, str(n), str(out), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def seen(folder: Path, names) -> dict[str, str]:
    return {name: read_published(folder / name).decode() for name in names}


def test_a_kill_after_any_write_leaves_the_old_set_or_the_new_one(tmp_path):
    out = tmp_path / "out"
    publish(out, OLD, job="test")
    code = f"from toolsense.utils.publish import publish\npublish(sys.argv[2], {NEW!r}, job='test')\n"
    outcomes = []
    for n in range(1, 2 * len(NEW) + 2):  # 3 staged files, the manifest, 3 renames
        proc = run_killed(n, out, code)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        got = seen(out, OLD)
        assert got in (OLD, NEW), (n, got)
        outcomes.append("new" if got == NEW else "old")
        publish(out, OLD, job="test")  # the next publish finishes or discards what the kill left
        assert seen(out, OLD) == OLD and not list(out.glob(".*.staged"))
    assert outcomes == ["old"] * len(NEW) + ["new"] * (len(NEW) + 1)  # the manifest is the commit point


def test_a_killed_publish_is_completed_by_the_next_one_with_the_files_in_place(tmp_path):
    out = tmp_path / "out"
    publish(out, OLD)
    code = f"from toolsense.utils.publish import publish\npublish(sys.argv[2], {NEW!r})\n"
    assert run_killed(len(NEW) + 2, out, code).returncode == -signal.SIGKILL  # manifest written, one file renamed
    assert (out / "table.md").read_text() == NEW["table.md"] and (out / "results.json").read_text() == OLD["results.json"]
    assert seen(out, NEW) == NEW  # the reader takes the staged copy the manifest names
    publish(out, {"other.txt": "x"}, keep=["samples.jsonl"])
    assert {p.name for p in out.iterdir()} == {*NEW, "other.txt", MANIFEST}
    assert {n: (out / n).read_text() for n in NEW} == NEW  # the renames the kill cut short were finished first


def test_readers_refuse_a_file_changed_since_it_was_published_and_read_old_folders_saying_so_once(tmp_path, caplog):
    out = tmp_path / "out"
    publish(out, OLD, keep=["samples.jsonl"])
    (out / "table.md").write_text("edited by hand\n")
    with pytest.raises(DataError, match=r"table.md: its content is not what .*manifest.json published"):
        read_published(out / "table.md")
    (out / "extra.json").write_text("{}")
    with pytest.raises(DataError, match=r"extra.json: not among the files .*manifest.json publishes"):
        read_published(out / "extra.json")
    import toolsense.utils.publish as pub

    pub._legacy_said.clear()
    old = [tmp_path / f"before{i}" for i in range(3)]
    for d in old:
        d.mkdir()
        (d / "results.json").write_text('{"n": 1}')
    with caplog.at_level(logging.WARNING, logger="toolsense.utils.publish"):
        assert [json.loads(read_published(d / "results.json")) for d in old] == [{"n": 1}] * 3
    said = [r.getMessage() for r in caplog.records if MANIFEST in r.getMessage()]
    assert len(said) == 1 and "written before result files were published together" in said[0]
