"""benchmarks/gpu_check.sh --smoke on the CPU, as the GPU machine runs it: it installs the wheels of
its wheelhouse this Python lacks offline (--no-index) into its own folder, then runs every default
part of benchmarks/gpu_check.py at tiny sizes, writing one JSON file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
    env = {**os.environ, "PYTHON": sys.executable, "GPU_WHEELS": str(wheels), "GPU_SITE": str(site), "OMP_NUM_THREADS": "1",
           "PIP_NO_INDEX": "1"}
    run = subprocess.run([str(ROOT / "benchmarks" / "gpu_check.sh"), "--smoke", "--out", str(out)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"installing 1 wheels from {wheels} into {site} (no network)" in run.stdout
    assert (site / "tsgpuprobe.py").read_text() == "VALUE = 41\n"
    res = json.loads(out.read_text())
    assert res["device"] == "cpu" and list(res["args"]["parts"]) == ["train-8b", "search-8b", "rankings-tiny"]
    train = res["train-8b"]
    assert train["plan_bytes"] > 0 and train["plan_text"].startswith("memory plan per device (ddp;") and len(train["step_seconds"]) == 2
    for kind, depth in (("flat", 1), ("structural", 2)):
        search = res["search-8b"][kind]
        assert search["depth"] == depth and search["tools"] == 300
        assert search["fp32"]["exactly_as_fp32"] == 1.0 and search["tf32"]["exactly_as_fp32"] == 1.0  # tf32 is fp32 on a CPU
        split = search["fp32"]["ms_per_query"]
        assert split["total"] >= split["prefill"] + split["decode"] > 0
    assert res["rankings-tiny"]["constrained_exactly_equal"] == 1.0 and res["rankings-tiny"]["devices"] == ["cpu", "cpu2"]
