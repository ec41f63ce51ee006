"""A ``-m`` sweep whose jobs a user error stopped (issue 49): the other jobs still run (and the sweep's end, its
comparison table, still comes), and the sweep ends with one line per refused job — its number, the overrides
that set it apart, the error — or one line when every job was refused alike, and exit 2. A bug still fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from toolsense.utils.errors import ConfigError, MissingFile
from toolsense.utils.hydra import DEBUG_ENV, Refused, RefusedJobs, sweep_refusals

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "tests" / "assets" / "evaluation"


def test_a_sweep_goes_on_past_a_refused_job_and_ends_with_its_line(tmp_path):
    """Two BM25 evaluations (no model loads), the second over a catalog that does not exist."""
    missing, sweep = tmp_path / "no_such_tools.jsonl", tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", DEBUG_ENV: "", "HYDRA_FULL_ERROR": ""}
    args = [sys.executable, str(ROOT / "evaluate.py"), "-m", "parametric=false", "baseline=bm25", "benchmark=generated",
            f"benchmark.path={ASSETS / 'queries.jsonl'}", f"catalog.path={ASSETS / 'tools.jsonl'},{missing}",
            f"hydra.sweep.dir={sweep}"]
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [x for x in proc.stderr.splitlines() if x.startswith("evaluate.py: error:")]
    assert errors == [f"evaluate.py: error: {missing}: no such file",  # as the job ended
                      f"evaluate.py: error: job 1 of 2 (++catalog.path={missing}): {missing}: no such file"]  # the summary
    assert (sweep / "0" / "generated" / "bm25" / "results.json").is_file()  # the first job evaluated
    assert not (sweep / "1").exists()  # the refused job left nothing


def _job(num: int, overrides: list[str], status: JobStatus, value) -> JobReturn:
    ret = JobReturn(overrides=overrides, hydra_cfg=OmegaConf.create({"hydra": {"job": {"num": num}}}))
    ret.status, ret.return_value = status, value
    return ret


def test_a_user_error_becomes_the_job_s_refusal_and_a_bug_stays_a_failure(monkeypatch):
    monkeypatch.setenv(DEBUG_ENV, "")
    monkeypatch.setenv("HYDRA_FULL_ERROR", "")
    refused, bug = (_job(0, [], JobStatus.FAILED, ConfigError("seed=-5: must be >= 0")),
                    _job(1, [], JobStatus.FAILED, KeyError("a bug")))
    for ret in (refused, bug):
        RefusedJobs().on_job_end(config=None, job_return=ret)
    assert refused.status == JobStatus.COMPLETED and refused.return_value == Refused("seed=-5: must be >= 0")
    assert bug.status == JobStatus.FAILED and isinstance(bug._return_value, KeyError)
    monkeypatch.setenv(DEBUG_ENV, "1")  # debug=true: the job fails with its traceback, as a bug does
    debugged = _job(2, [], JobStatus.FAILED, MissingFile("x.jsonl: no such file"))
    RefusedJobs().on_job_end(config=None, job_return=debugged)
    assert debugged.status == JobStatus.FAILED


def test_the_summary_names_each_refused_job_or_says_once_that_all_were_refused_alike():
    common = ["model=tiny_random", "trainer.seed=-5"]
    ok = _job(0, [*common, "experiment=tg"], JobStatus.COMPLETED, 0.5)
    a = _job(1, [*common, "experiment=tg_h"], JobStatus.COMPLETED, Refused("trainer.seed=-5: must be >= 0"))
    b = _job(2, [*common, "experiment=tg_3fm"], JobStatus.COMPLETED, Refused("catalog.path: x: no such file"))
    assert sweep_refusals([[ok, a, b]]) == ["job 1 of 3 (experiment=tg_h): trainer.seed=-5: must be >= 0",
                                            "job 2 of 3 (experiment=tg_3fm): catalog.path: x: no such file"]
    b.return_value = Refused("trainer.seed=-5: must be >= 0")
    assert sweep_refusals([[a, b]]) == ["all 2 jobs of the sweep: trainer.seed=-5: must be >= 0"]
    assert sweep_refusals([[ok]]) == [] and sweep_refusals(ok) == []  # a single run returns one JobReturn
