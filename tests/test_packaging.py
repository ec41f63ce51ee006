"""The package researchers install: the wheel built from this checkout, installed non-editable into
a fresh virtual environment, runs ``toolsense-evaluate model=tiny_random suite=demo`` from an empty
folder, and ``toolsense-train`` takes a config folder of the user's own (``--config-dir``) and an unquoted
override list. Nothing may reach back into the checkout (configs, demo catalog, probes ship in the wheel).

The fresh environment sees the dependencies already installed here (a ``.pth`` line naming this
interpreter's site-packages, which is appended *after* the venv's own, and whose ``.pth`` files,
the editable install of toolsense among them, are not run), and never this checkout: PYTHONPATH is
dropped and the job runs from an empty folder. pip installs with ``--ignore-installed``, so it never
touches the environment the tests run in. About a minute on 2 cores (the wheel ~5 s, the job ~40 s).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("toolsense", "pyproject.toml", "README.md")


def _tracked_copy(dest: Path) -> Path:
    """The committed-or-staged sources the wheel is built from, copied (the build writes build/ and
    *.egg-info beside them, not into the checkout)."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", *SHIPPED],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


def _fresh_venv(where: Path) -> Path:
    """A venv without pip whose site-packages ends with this interpreter's (the dependencies); its python."""
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "toolsense_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_the_wheel_runs_toolsense_evaluate_from_an_empty_folder(tmp_path):
    src = _tracked_copy(tmp_path / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(tmp_path / "dist"), str(src)], check=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("toolsense-*.whl")
    python = _fresh_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                    "--no-cache-dir", str(wheel)], env=env, check=True, timeout=300)
    work = tmp_path / "empty"
    work.mkdir()
    where = subprocess.run([python, "-c", "import toolsense; print(toolsense.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(tmp_path / "venv") and not Path(where).is_relative_to(ROOT), where
    env |= {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOOLSENSE_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([tmp_path / "venv" / "bin" / "toolsense-evaluate", "model=tiny_random", "suite=demo"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (results,) = work.glob("outputs/evaluate/*/results.json")  # Hydra's own output folder, under the empty one
    summary = json.loads(results.read_text())
    rows = {(r["benchmark"], r["system"]): r for r in summary["results"]}
    assert {("standard", "tiny_random:untrained"), ("realistic", "dense"), ("mcq", "token"), ("qa", "card")} \
        <= set(rows)
    assert rows["standard", "bm25"]["n"] == 58 and rows["realistic", "bm25"]["n"] == 54  # the demo's test queries
    shipped = Path(where).parent / "catalog" / "demo" / "queries.jsonl"  # read from the installed package
    assert rows["standard", "tiny_random:untrained"]["benchmark_path"] == str(shipped)
    assert (results.parent / "evaluate.log").is_file()  # Hydra names the job after its module: evaluate
    assert sorted(p.name for p in work.iterdir()) == ["outputs"]  # it wrote nowhere else in the folder it ran from

    mine = tmp_path / "myconf" / "model"  # a config folder of the user's own, beside the shipped one
    mine.mkdir(parents=True)
    (mine / "my_tiny.yaml").write_text("name_or_path: tiny_random\ndtype: bfloat16\n")
    shown = subprocess.run([tmp_path / "venv" / "bin" / "toolsense-train", "--config-dir", str(mine.parent),
                            "model=my_tiny", "evaluate.benchmarks.rrb=rrb", "evaluate.baselines.bm25=bm25", "--cfg", "job"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "dtype: bfloat16" in shown.stdout and "rrb: rrb" in shown.stdout, shown.stdout
    # the study archives are not in the wheel: reproduce.py train=false from the empty folder names what it looked for
    empty = tmp_path / "empty_again"  # another empty folder: the first now holds outputs/
    empty.mkdir()
    refused = subprocess.run([tmp_path / "venv" / "bin" / "toolsense-reproduce", "study=cpu", "train=false"],
                             cwd=empty, env=env, capture_output=True, text=True, timeout=300)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and f"not at {empty}/docs/reports/reproduction_results.tar.xz" in said, said[-3000:]
    assert "ships with the repository, not with the installed package" in said and "archive=<its path>" in said, said[-3000:]
