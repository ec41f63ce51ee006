"""Every run records the code it ran on (utils/io.py code_state: the commit and the hash of any uncommitted
change of the code), and the patch code_diff gives rebuilds that code from the commit; a study keeps the
patch under its root and in its archive before any run starts (study/run.py keep_code_diff)."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from toolsense.utils.io import code_diff, code_state


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    r = tmp_path / "repo"
    (r / "toolsense").mkdir(parents=True)
    (r / "docs").mkdir()
    (r / "toolsense" / "a.py").write_text("x = 1\n")
    (r / "docs" / "a.md").write_text("doc\n")
    (r / "train.py").write_text("print('train')\n")
    _git(r, "init", "-q")
    _git(r, "add", "-A")
    _git(r, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    return r


def test_code_state_says_what_code_ran_and_ignores_what_is_not_code(repo):
    head = _git(repo, "rev-parse", "HEAD").strip()
    assert code_state(repo) == {"commit": head, "uncommitted": False, "diff_sha256": None}
    (repo / "docs" / "a.md").write_text("edited\n")  # docs, a study's archive: not the code a result came from
    (repo / "docs" / "new.md").write_text("new\n")
    (repo / "docs" / "conf.py").write_text("tests and docs scripts are not the entry scripts\n")
    assert code_state(repo)["uncommitted"] is False
    (repo / "toolsense" / "a.py").write_text("x = 2\n")
    one = code_state(repo)
    assert one["uncommitted"] and one["commit"] == head and len(one["diff_sha256"]) == 64
    (repo / "toolsense" / "b.py").write_text("y = 1\n")  # an untracked module is code that may be imported
    two = code_state(repo)
    assert two["diff_sha256"] != one["diff_sha256"]
    assert code_state(repo / "toolsense")["diff_sha256"] == two["diff_sha256"]  # read from anywhere in the checkout
    assert code_state(repo.parent) is None  # not a git checkout (an installed wheel)


def test_the_patch_rebuilds_the_code_that_ran_from_its_commit(repo, tmp_path):
    (repo / "toolsense" / "a.py").write_text("x = 2\n")
    (repo / "toolsense" / "b.py").write_text("y = 1\n")
    (repo / "train.py").unlink()
    sha, patch = code_diff(repo)
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(repo), str(clone))
    _git(clone, "checkout", "-q", sha)
    subprocess.run(["git", "apply", "-"], cwd=clone, input=patch, text=True, check=True)
    assert (clone / "toolsense" / "a.py").read_text() == "x = 2\n" and (clone / "toolsense" / "b.py").read_text() == "y = 1\n"
    assert not (clone / "train.py").exists()
    assert code_state(clone)["diff_sha256"] == code_state(repo)["diff_sha256"]


def test_done_json_records_the_code_state(tmp_path, monkeypatch):
    from toolsense.utils import rundir

    state = {"commit": "c" * 40, "uncommitted": True, "diff_sha256": "d" * 64}
    monkeypatch.setattr(rundir, "code_state", lambda: state)
    rd = rundir.RunDir(tmp_path)
    rd.mark_finished({"a": 1})
    assert json.loads(rd.done_path.read_text())["code"] == state and rd.finished({"a": 1})


def test_a_study_keeps_the_diff_of_uncommitted_code_before_any_run_and_refuses_where_it_cannot(tmp_path, monkeypatch):
    from toolsense.conduct.archive import archive_results
    from toolsense.plan.registration import register
    from toolsense.study import run as study_run
    from toolsense.study.config import StudyConfig
    from toolsense.utils import io
    from toolsense.utils.io import sha256_text

    cfg = StudyConfig(name="t", root=str(tmp_path / "root"))
    monkeypatch.setattr(io, "code_diff", lambda cwd=None: ("c" * 40, ""))
    assert study_run.keep_code(cfg) is None and not (tmp_path / "root" / ".code").exists()  # committed: nothing kept
    patch = "diff --git a/toolsense/a.py b/toolsense/a.py\n-x = 1\n+x = 2\n"
    monkeypatch.setattr(io, "code_diff", lambda cwd=None: ("c" * 40, patch))
    digest = study_run.keep_code(cfg)
    assert digest == sha256_text(patch) and (tmp_path / "root" / ".code" / f"{digest}.diff").read_text() == patch
    register(cfg)
    archive_results(cfg.root, tmp_path / "a.tar.xz")
    with tarfile.open(tmp_path / "a.tar.xz") as tar:
        assert tar.extractfile(f"root/.code/{digest}.diff").read().decode() == patch
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.raises(RuntimeError, match=r"study=t: the code has uncommitted changes and their diff cannot be kept"):
        study_run.keep_code(StudyConfig(name="t", root=str(blocked)))
