"""slurm/train_multinode.sbatch on the real (single-node) test cluster: sbatch --nodes 1 with two
processes per node (gloo on CPU) proves its launch line — srun starts torchrun, both ranks meet at
the c10d rendezvous on the job's first node and train one model into the shared output_dir."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.slurm.conftest import wait_for_jobs
from tests.training.conftest import ROOT, TINY


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def test_multinode_template_runs_two_ranks(slurm_cluster, tmp_path):
    run_dir, log = tmp_path / "run", tmp_path / "job.out"
    env = {**os.environ, "NPROC_PER_NODE": "2", "PYTHON": sys.executable, "MASTER_PORT": str(_free_port()),
           "TORCHRUN_ARGS": "--tee 3", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    cmd = ["sbatch", "--parsable", "--nodes", "1", "--cpus-per-task", "2", "--mem", "4G", "--time", "20", f"--output={log}",
           str(ROOT / "slurm" / "train_multinode.sbatch"), *TINY, "experiment=tg", "stage2.enabled=false",
           "stage1.max_steps=2", f"output_dir={run_dir}"]
    job = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    wait_for_jobs([job], timeout=600)
    out = log.read_text()
    state = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True).stdout
    assert "batch 2 per device x 1 accumulation x 2 processes = 4" in out, out[-3000:]
    assert "[default0]:" in out and "[default1]:" in out  # torchrun's per-rank prefixes: both ranks ran
    assert (run_dir / "stage1" / "model.safetensors").exists() and not (run_dir / "stage1.tmp").exists(), out[-3000:]
    assert "JobState=FAILED" not in state
