"""``ruff check`` over the whole checkout, with the settings in pyproject.toml (line length 140; pycodestyle,
pyflakes, import order), so `make test` fails on the first new lint error instead of the lead finding it at merge.
ruff comes with the dev extra; a missing ruff fails (a skip would hide every lint error on that machine)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("ruff") is None:
        pytest.fail(f"ruff is not installed in {sys.executable}: pip install -e .[dev]")
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_ruff_check_passes_on_the_checkout():
    out = _ruff(str(ROOT))
    assert out.returncode == 0, f"ruff check failed (`ruff check --fix .` fixes some):\n{out.stdout}{out.stderr}"


def test_ruff_uses_the_project_line_length(tmp_path):
    # the check above only means something if the project's settings are the ones applied: 140 passes, 141 fails
    ok, long = tmp_path / "ok.py", tmp_path / "long.py"
    ok.write_text(f"X = '{'a' * 134}'\n")
    long.write_text(f"X = '{'a' * 135}'\n")
    config = str(ROOT / "pyproject.toml")
    assert _ruff("--config", config, str(ok), cwd=tmp_path).returncode == 0
    out = _ruff("--config", config, "--output-format", "concise", str(long), cwd=tmp_path)
    assert out.returncode == 1 and "E501 Line too long (141 > 140)" in out.stdout, out.stdout + out.stderr
