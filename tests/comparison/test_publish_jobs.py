"""Issue #45 item 7: evaluate.py and compare.py killed (SIGKILL) during their final writes. The user's
command runs in a subprocess that kills itself right after the n-th rename into its output folder;
the folder then reads (through its manifest, as compare.py, the report and the study read it) as the
old set or the new one, never a mix, and the next run of the job finishes what the kill cut short.
Before: compare.py killed after comparison.json left comparison.md/.csv/.json new and report.html old;
evaluate.py killed after results.json left table.md and results.json at n=3, report.html at n=2."""

from __future__ import annotations

import json
import re
import shutil
import signal
from pathlib import Path

import pytest

from tests.utils.test_publish import ROOT, run_killed
from toolsense.utils.publish import read_published

ASSETS = ROOT / "tests" / "assets" / "training"
CLI = "import runpy\nsys.argv = sys.argv[3:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
"""After the kill prelude: run the job's script (argv[3]) with its overrides, as a user would."""


def _evaluate_args(out: Path, limit: int) -> list[str]:
    """Baseline-only evaluate.py over the 9-tool assets (BM25 needs no model)."""
    return ["parametric=false", f"catalog.path={ASSETS / 'tools.jsonl'}", "benchmark=generated",
            f"benchmark.path={ASSETS / 'queries.jsonl'}", "benchmark.split=test", f"benchmark.limit={limit}",
            "baseline=bm25", "overwrite=true", f"output_dir={out}", f"hydra.run.dir={out.parent / 'hydra'}"]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> Path:
    from toolsense.evaluation.config import compose_evaluate
    from toolsense.evaluation.runner import run

    out = tmp_path_factory.mktemp("publish") / "eval"
    run(compose_evaluate(_evaluate_args(out, 2)[:-1]), out)
    return out


def _n_of(folder: Path) -> dict[str, int]:
    """The item count each top-level file of an evaluation states, read as its manifest published it."""
    table, results, page = (read_published(folder / n).decode() for n in ("table.md", "results.json", "report.html"))
    return {"table.md": int(re.search(r"\| generated \| bm25 \| (\d+) \|", table).group(1)),
            "results.json": json.loads(results)["results"][0]["n"],
            "report.html": int(re.search(r'data-metric="n" data-value="(\d+)"', page).group(1))}


@pytest.mark.parametrize("kill_after, seen", [
    (1, 2),  # a staged file: the old set
    # the manifest; one rename: the new set (slow: a subprocess importing torch each, ~10 s; compare's test covers both points)
    pytest.param(4, 3, marks=pytest.mark.slow), pytest.param(5, 3, marks=pytest.mark.slow)])
def test_evaluate_killed_mid_publish_reads_old_or_new_never_a_mix(evaluated, tmp_path, kill_after, seen):
    out = tmp_path / "eval"
    shutil.copytree(evaluated, out)
    assert _n_of(out) == dict.fromkeys(("table.md", "results.json", "report.html"), 2)
    proc = run_killed(kill_after, out, CLI, "evaluate.py", *_evaluate_args(out, 3))
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert _n_of(out) == dict.fromkeys(("table.md", "results.json", "report.html"), seen)


def _compare_args(roots: Path, out: Path, metric: str) -> list[str]:
    return [f"roots=[{roots}]", f"metrics=[{metric}]", "plots=false", f"output_dir={out}", f"hydra.run.dir={out.parent / 'hydra'}"]


COMPARISON = ("comparison.md", "comparison.csv", "comparison.json", "report.html")


def test_compare_killed_mid_publish_reads_old_or_new_and_the_rerun_completes(evaluated, tmp_path):
    from toolsense.comparison.compare import run

    old, new = tmp_path / "old", tmp_path / "new"
    for folder, metric in ((old, "Rc@1"), (new, "Rc@5")):
        run({"roots": [str(evaluated)], "metrics": [metric], "plots": False}, folder)
    want = {k: {n: (folder / n).read_bytes() for n in COMPARISON} for k, folder in (("old", old), ("new", new))}
    assert want["old"]["report.html"] != want["new"]["report.html"]
    outcomes = []
    for kill_after in (1, 4, 5, 7):  # staged files 1-4, the manifest 5, renames 6-9
        out = tmp_path / f"killed{kill_after}"
        shutil.copytree(old, out)
        proc = run_killed(kill_after, out, CLI, "compare.py", *_compare_args(evaluated, out, "Rc@5"))
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
        got = {n: read_published(out / n) for n in COMPARISON}
        outcomes.append(next(k for k, files in want.items() if files == got))  # StopIteration: a mix
    assert outcomes == ["old", "old", "new", "new"]
    run({"roots": [str(evaluated)], "metrics": ["Rc@5"], "plots": False}, out)  # the rerun after a kill
    assert {n: (out / n).read_bytes() for n in COMPARISON} == want["new"] and not list(out.glob(".*.staged"))
