"""Issue 44, "Done when", on the real (single-node, 2-CPU) Slurm cluster: a -m sweep of 2 jobs x 2 ranks
(launcher=slurm hydra.launcher.tasks_per_node=2: each Slurm task one rank, gloo) trains Stage 1 -> Stage 2,
evaluates data-parallel in the same job and compares. Seed 1's job is cancelled (scancel: SIGTERM) in the
middle of Stage 2: its ranks agree to stop at the end of a step and save a checkpoint; resubmitting the
same command skips seed 0 (done) and resumes seed 1, whose weights and results then equal an
uninterrupted `torchrun --nproc_per_node 2` run of the same config."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.slurm.conftest import wait_for_jobs
from tests.training.conftest import ASSETS, ROOT, TINY

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false"}
STAGE2_STEPS = 40  # a window for the cancel: seed 1's Stage 2 is cancelled after its step 5
CUT_AFTER = 5  # past Stage 2's first epoch (4 steps an epoch): a resume mid-epoch once drew epoch 0's order on 2 ranks
CONFIG = [*(o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps", "stage2.sources.0.split"))),
          "stage1.max_steps=2", f"stage2.max_steps={STAGE2_STEPS}", "stage2.sources.0.split=train", "experiment=tg",
          "evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={ASSETS / 'queries.jsonl'}",
          "evaluate.settings.benchmarks.generated.split=test", "evaluate.decoding=beam10", "evaluate.settings.metrics.resamples=100"]
BATCH = "batch 2 per device x 1 accumulation x 2 processes = 4"  # trainer.effective_batch=4 preserved over 2 ranks


def _stage2_steps(run: Path) -> list[int]:
    path = run / "metrics.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    return [r["step"] for r in rows if "train/stage2/loss" in r]


def _cancel_mid_stage2(sweep: Path, run: Path, proc: subprocess.Popen) -> str:
    """scancel the job training ``run`` once its Stage 2 logged step ``CUT_AFTER``; returns its job id."""
    deadline = time.time() + 900
    while time.time() < deadline and proc.poll() is None and not [s for s in _stage2_steps(run) if s >= CUT_AFTER]:
        time.sleep(0.2)
    assert [s for s in _stage2_steps(run) if s >= CUT_AFTER], f"seed 1 never reached Stage 2's step {CUT_AFTER} (sweep rc {proc.poll()})"
    job = next(p.name for p in (sweep / ".submitit").iterdir() if re.fullmatch(r"\d+_1", p.name))
    subprocess.run(["scancel", job], check=True)
    return job


def _weights(run: Path) -> dict:
    return load_file(str(run / "stage2" / "model.safetensors"))


def _results(run: Path) -> dict:
    """The run's results.json but for what names the run's folder (``config.run``, ``config.output_dir``, the
    fingerprint's ``system.run``): metrics, intervals, the checkpoint's sha256, hashes, coverage."""
    res = json.loads((run / "eval" / "generated" / "model" / "results.json").read_text())
    del res["config"]["run"], res["config"]["output_dir"], res["fingerprint"]["system"]["run"]
    return res


def test_two_jobs_of_two_ranks_cancel_resume_and_equal_torchrun(slurm_cluster, tmp_path):
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "launcher=slurm", *CONFIG, "trainer.seed=0,1",
           f"hydra.sweep.dir={sweep}", "hydra.launcher.tasks_per_node=2", "hydra.launcher.cpus_per_task=1",
           "hydra.launcher.mem_gb=3", "hydra.launcher.timeout_min=20"]
    t0 = time.time()
    first = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seed1 = sweep / "1_tg-lora"
    job = _cancel_mid_stage2(sweep, seed1, first)
    out, _ = first.communicate(timeout=600)
    wait_for_jobs([job.split("_")[0]])
    assert first.returncode != 0 and "stopped on SIGTERM: stage2 saved" in out, out[-4000:]
    saved = sorted(seed1.glob("checkpoints/stage2/checkpoint-*"))
    assert len(saved) == 1 and not (seed1 / "stage2").exists(), saved  # save_steps=1000: the signal's checkpoint alone
    cut_at = int(saved[0].name.split("-")[1])
    assert CUT_AFTER <= cut_at < STAGE2_STEPS

    again = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=1200)  # resubmitted
    print(f"2 jobs x 2 ranks on Slurm, one cancelled and resubmitted: {time.time() - t0:.0f} s")
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert (sweep / "comparison.md").is_file()  # the submitting process waited for its jobs, then compared
    for run in (sweep / "0_tg-lora", seed1):
        log = (run / "train.log").read_text()
        assert "rank 0 of world_size 2" in log and BATCH in log, log[-3000:]
        assert "rank 1 of world_size 2" not in log  # rank 1 logs to its Slurm output only
    summary = [json.loads(line)["summary"] for line in (seed1 / "metrics.jsonl").read_text().splitlines() if "summary" in line][-1]
    assert summary["stage2"]["resumed_from"].endswith(f"checkpoint-{cut_at}") and summary["stage2"]["global_step"] == STAGE2_STEPS
    assert _stage2_steps(seed1) == list(range(1, STAGE2_STEPS + 1))  # each step counted once
    assert "trained and evaluated earlier under this config" in "".join(p.read_text() for p in sweep.glob(".submitit/*/*_0_log.*"))

    ref = tmp_path / "torchrun"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29547",
                str(ROOT / "train.py"), *CONFIG, "trainer.seed=1", f"output_dir={ref}"]
    out = subprocess.run(torchrun, cwd=ROOT, env={**ENV, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    a, b = _weights(ref), _weights(seed1)
    diff = max((a[k].float() - b[k].float()).abs().max().item() for k in a)
    print(f"max |weight difference| Slurm (cancelled, resumed) vs torchrun: {diff:.3g} over {len(a)} tensors")
    assert a.keys() == b.keys() and diff <= 1e-5
    assert _results(ref) == _results(seed1)


# slow: a second Slurm job of 2 ranks (~4 min on 2 busy cores); the default test covers the SIGTERM path
@pytest.mark.slow
def test_usr2_requeues_the_job_which_resumes_from_its_checkpoint(slurm_cluster, tmp_path):
    """submitit's own preemption signal (USR2, as Slurm sends it signal_delay_s before a time limit): the ranks save a
    checkpoint together, submitit requeues the job, and the requeued job resumes and finishes: the sweep succeeds."""
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "launcher=slurm", *(o for o in CONFIG if not o.startswith("evaluate.")),
           f"hydra.sweep.dir={sweep}", "hydra.launcher.tasks_per_node=2", "hydra.launcher.cpus_per_task=1",
           "hydra.launcher.mem_gb=3", "hydra.launcher.timeout_min=20"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = sweep / "0_tg-lora"
    deadline = time.time() + 900
    while time.time() < deadline and proc.poll() is None and not [s for s in _stage2_steps(run) if s >= 2]:
        time.sleep(0.2)
    job = next(p.name for p in (sweep / ".submitit").iterdir() if re.fullmatch(r"\d+", p.name))  # one job: no array
    subprocess.run(["scancel", "--signal=USR2", job], check=True)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-4000:]
    logs = "".join(p.read_text() for p in sweep.glob(".submitit/*/*_0_log.*"))
    assert "handing the SIGUSR2 over to submitit (requeue)" in logs and "Requeued job" in logs, logs[-4000:]
    summary = [json.loads(line)["summary"] for line in (run / "metrics.jsonl").read_text().splitlines() if "summary" in line][-1]
    assert summary["stage2"]["resumed_from"] and summary["stage2"]["global_step"] == STAGE2_STEPS
    assert _stage2_steps(run) == list(range(1, STAGE2_STEPS + 1))
