"""benchmarks/gpu_check.sh --smoke on the CPU, as the GPU machine runs it: on a Python that sees
only the bare GPU image's packages (benchmarks/gpu_wheels.py: IMAGE, with their dependencies) and
the wheelhouse's (BINARY, SOURCE), it installs the wheels of its wheelhouse this Python lacks
offline (--no-index) into its own folder, then runs every default part of benchmarks/gpu_check.py
at tiny sizes, writing one JSON file. A package gpu_check.py needs that neither holds fails it."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
IMAGE_PYTHON = {"extra": "", "python_version": "3.12", "python_full_version": "3.12.3"}
"""Markers of dependencies are read as the image's Python reads them (gpu_wheels.py --python)."""


def _gpu_wheels():
    spec = importlib.util.spec_from_file_location("gpu_wheels", ROOT / "benchmarks" / "gpu_wheels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _closure(names: list[str]) -> dict[str, md.Distribution]:
    """The installed distributions of ``names`` and, recursively, of what they require."""
    found, todo = {}, [canonicalize_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        try:
            found[name] = dist = md.distribution(name)
        except md.PackageNotFoundError:  # not installed here (nvidia-ml-py on a CPU machine): nothing to see
            continue
        todo += [canonicalize_name(r.name) for r in map(Requirement, dist.requires or [])
                 if r.marker is None or r.marker.evaluate(IMAGE_PYTHON)]
    return found


def _bare_python(folder: Path) -> tuple[Path, Path]:
    """An interpreter that sees the standard library and, in ``site``, links to the image's and the
    wheelhouse's packages and pip only (``python -S``: this venv's site-packages are not read)."""
    wheels = _gpu_wheels()
    site = folder / "bare-site"
    site.mkdir()
    for dist in _closure([*wheels.IMAGE, *wheels.BINARY, *wheels.SOURCE, "pip"]).values():
        root = Path(dist.locate_file(""))
        for top in {Path(str(f)).parts[0] for f in dist.files or []} - {"..", "__pycache__"}:
            if not top.endswith(".pth") and (root / top).exists() and not (site / top).exists():
                (site / top).symlink_to(root / top)
    python = folder / "python-bare"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    return python, site


def _probe_wheel(folder: Path) -> Path:
    """A one-module wheel no environment has: what the script must install without network."""
    path = folder / "tsgpuprobe-0.1-py3-none-any.whl"
    files = {"tsgpuprobe.py": "VALUE = 41\n",
             "tsgpuprobe-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tsgpuprobe\nVersion: 0.1\n",
             "tsgpuprobe-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},,\n" for name in files) + "tsgpuprobe-0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in {**files, "tsgpuprobe-0.1.dist-info/RECORD": record}.items():
            z.writestr(name, text)
    return path


def test_gpu_check_sh_smoke_installs_offline_and_writes_every_part(tmp_path):
    wheels, site, out = tmp_path / "wheels", tmp_path / "site", tmp_path / "gpu_check.json"
    wheels.mkdir()
    _probe_wheel(wheels)
    python, bare = _bare_python(tmp_path)
    env = {**os.environ, "PYTHON": str(python), "PYTHONPATH": str(bare), "GPU_WHEELS": str(wheels), "GPU_SITE": str(site),
           "OMP_NUM_THREADS": "1", "PIP_NO_INDEX": "1"}
    # train-ranks runs below on this venv's Python: under this bare `python -S` image, datasets' fingerprint of the
    # training table (dill) fails to pickle pyarrow's MonthDayNano (not yet understood; a risk for the device run)
    parts = ["train-8b", "search-8b", "rankings-tiny"]
    run = subprocess.run([str(ROOT / "benchmarks" / "gpu_check.sh"), "--smoke", "--parts", *parts, "--out", str(out)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    bare = subprocess.run([str(python), "-c", "import openai"], env=env, capture_output=True, text=True)
    assert "No module named 'openai'" in bare.stderr  # a toolsense dependency the image lacks is not seen
    assert f"installing 1 wheels from {wheels} into {site} (no network)" in run.stdout
    assert (site / "tsgpuprobe.py").read_text() == "VALUE = 41\n"
    res = json.loads(out.read_text())
    assert res["device"] == "cpu" and list(res["args"]["parts"]) == parts
    train = res["train-8b"]
    assert train["plan_bytes"] > 0 and train["plan_text"].startswith("memory plan per device (ddp;") and len(train["step_seconds"]) == 2
    for kind, depth in (("flat", 1), ("structural", 2)):
        search = res["search-8b"][kind]
        assert search["depth"] == depth and search["tools"] == 300
        assert search["fp32"]["exactly_as_fp32"] == 1.0 and search["tf32"]["exactly_as_fp32"] == 1.0  # tf32 is fp32 on a CPU
        split = search["fp32"]["ms_per_query"]
        assert split["total"] >= split["prefill"] + split["decode"] > 0
    assert res["rankings-tiny"]["constrained_exactly_equal"] == 1.0 and res["rankings-tiny"]["devices"] == ["cpu", "cpu2"]


def test_the_training_path_runs_in_a_process_group_joined_from_the_rank_environment(tmp_path):
    """gpu_check.py's train-ranks part (a default part on the device): train.py's Stage 1 + Stage 2 inside a group
    joined by env:// at world size 1 (gloo here, NCCL on a GPU)."""
    out = tmp_path / "ranks.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--smoke", "--parts", "train-ranks",
                          "--out", str(out)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = json.loads(out.read_text())["train-ranks"]
    assert ranks["world_size"] == 1 and ranks["backend"] == "gloo" and ranks["finished"]
    # the ranks came from the launcher's rank setup (Slurm's variables through submitit), not set by hand
    assert ranks["exported"] == {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    assert all(st["global_step"] == 2 and st["train_loss"] > 0 for st in ranks["stages"].values())


def _blocking(folder: Path, names: list[str]) -> dict:
    """An environment whose Python cannot import ``names`` (a sitecustomize that refuses them), as on an
    image that lacks them."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Refuse:\n"
        f"    names = {names!r}\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in self.names:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Refuse())\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}


@pytest.mark.parametrize("missing", [["tqdm"], ["hydra", "trl"]])
def test_a_missing_package_is_named_before_any_third_party_import(tmp_path, missing):
    """gpu_check.py's guard runs before torch, tqdm (benchmarks/timing.py) or toolsense load: one line naming
    what is missing, exit 2, no traceback."""
    env = _blocking(tmp_path / "site", missing)
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--smoke", "--parts", "rankings-tiny"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    assert f"missing: {', '.join(missing)}" in run.stderr and "Traceback" not in run.stderr
    assert ("the device image's own" in run.stderr) == (missing == ["tqdm"])


WHEELHOUSE_MIB = 12
"""``make gpu-wheels`` measured 7.8 MiB (16 wheels, 2026-12), with room to grow: what the tree may not crowd out."""


def test_what_a_device_call_carries_stays_under_64_mib():
    """The working tree that travels (tracked + untracked-not-ignored files) plus the wheelhouse fit one call
    (gpu_wheels.py refuses a wheelhouse that would not)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    wheels = _gpu_wheels()
    tree = wheels.carried_bytes(ROOT)
    assert tree + WHEELHOUSE_MIB * 2**20 < wheels.CARRY_LIMIT, f"the tree is {tree / 2**20:.1f} MiB"
    built = ROOT / "gpu-wheels"
    if built.is_dir():
        assert wheels.carried_bytes(ROOT, built) < wheels.CARRY_LIMIT
