"""launcher=slurm against a real (single-node) Slurm cluster: a Hydra -m sweep of train.py becomes
one sbatch job per run (1 CPU each, so two run side by side on 2 cores), every job trains both
stages and evaluates its run, and a job that fails (a seed-specific Stage-2 file that does not
exist, chosen by interpolating the sweep's own parameters) leaves the others running to the end."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

from tests.slurm.conftest import wait_for_jobs
from tests.training.conftest import ASSETS, ROOT, TINY

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false"}
EVALUATE = ["evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={ASSETS / 'queries.jsonl'}",
            "evaluate.settings.benchmarks.generated.split=test", "evaluate.decoding=beam10", "evaluate.settings.metrics.resamples=100"]


def _sweep(tmp_path, experiments: str, seeds: str, missing: str) -> tuple[subprocess.CompletedProcess, list[str], float]:
    """Runs the sweep with Stage-2 queries read from ``queries-<experiment>-<seed>.jsonl``, every
    such file present except ``missing``; returns the CLI's result, the Slurm job ids, seconds."""
    data = tmp_path / "data"
    data.mkdir()
    for exp in experiments.split(","):
        for seed in seeds.split(","):
            if f"{exp}-{seed}" != missing:
                shutil.copy(ASSETS / "queries.jsonl", data / f"queries-{exp}-{seed}.jsonl")
    tiny = [o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps", "stage2.sources.0.path"))]
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "launcher=slurm", *tiny, "stage1.max_steps=2", "stage2.max_steps=2",
           f"stage2.sources.0.path={data}/queries-${{experiment}}-${{trainer.seed}}.jsonl", "stage2.sources.0.split=train", *EVALUATE,
           f"experiment={experiments}", f"trainer.seed={seeds}", f"hydra.sweep.dir={tmp_path / 'sweep'}",
           "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=2", "hydra.launcher.timeout_min=20"]
    t0 = time.time()
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=1200)
    jobs = sorted(p.name for p in (tmp_path / "sweep" / ".submitit").iterdir() if re.fullmatch(r"\d+_\d+", p.name))  # <array>_<index>
    wait_for_jobs(sorted({j.split("_")[0] for j in jobs}))
    return out, jobs, time.time() - t0


def _check(sweep, run: str, seed: int) -> None:
    cfg = (sweep / run / "config.yaml").read_text()
    assert f"seed: {seed}" in cfg
    for stage in ("stage1", "stage2"):
        assert (sweep / run / stage / "config.json").exists() and (sweep / run / stage / "tokenizer.json").exists()
    assert any((sweep / run / "checkpoints").iterdir())
    res = json.loads((sweep / run / "eval" / "generated" / "model" / "results.json").read_text())
    assert res["n"] == 3 and res["source"]["run"] == "../../.."  # the run, relative to the results file


def _sbatch_line(sweep, flag: str) -> str:
    script = next((sweep / ".submitit").glob(".submission_file_*.sh")).read_text()  # the sweep's one sbatch array
    return "\n".join(line for line in script.splitlines() if flag in line)


def _assert_failed_alone(out, sweep, failed: str) -> None:
    assert out.returncode != 0  # Hydra reports the failed job ...
    assert f"{sweep.parent / 'data' / 'queries-tg-0.jsonl'}: no such file" in out.stderr, out.stderr[-3000:]
    # ... before any work: train.py checks its Stage-2 sources before it trains Stage 1 (prepare)
    assert not (sweep / failed / "stage1").exists() and not (sweep / failed / "stage2").exists()
    assert "--cpus-per-task=1" in _sbatch_line(sweep, "cpus-per-task")
    assert _sbatch_line(sweep, "gpus") == ""  # no GPU asked for on a cluster without one


def test_slurm_sweep_four_jobs_one_fails(slurm_cluster, tmp_path):
    out, jobs, seconds = _sweep(tmp_path, "tg,tg_3fm", "0,1", missing="tg-0")
    sweep = tmp_path / "sweep"
    print(f"4-job Slurm sweep: {seconds:.0f} s")
    assert len(jobs) == 4
    _assert_failed_alone(out, sweep, "0_tg-lora")
    for run, seed in [("1_tg-lora", 1), ("2_tg_3fm-lora", 0), ("3_tg_3fm-lora", 1)]:  # ... and the rest ran to the end
        _check(sweep, run, seed)
