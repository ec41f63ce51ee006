"""Issue 44, item 1: each Slurm task of a launcher=slurm job is one rank. Its rank comes from Slurm's
environment (submitit's TorchDistributedEnvironment), also on the second node of a nodes=2 job, and
overrides what a setup line exported; rank 0 alone writes Hydra's files and claims the run folder."""

from __future__ import annotations

import os
import subprocess
import sys

from omegaconf import OmegaConf

from tests.training.conftest import ROOT, TINY
from toolsense.training import register_configs
from toolsense.utils.compose import compose
from toolsense.utils.launcher import quiet_rank
from toolsense.utils.ranks import export_slurm_ranks, on_rank0
from toolsense.utils.rundir import RunDir

# task 9 of a 2-node job of 8 tasks per node: the second task on the second node
SLURM_TASK = {"SUBMITIT_EXECUTOR": "slurm", "SLURM_JOB_ID": "4242", "SLURM_NTASKS": "16", "SLURM_JOB_NUM_NODES": "2",
              "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_PROCID": "9", "SLURM_LOCALID": "1"}
register_configs()
TORCH_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def test_a_slurm_task_of_a_two_node_job_is_its_rank(monkeypatch):
    for key, value in SLURM_TASK.items():
        monkeypatch.setenv(key, value)
    for key in TORCH_KEYS:
        monkeypatch.setenv(key, "0" if key != "WORLD_SIZE" else "1")  # what conf/study/paper.yaml's setup exported
    monkeypatch.delenv("MASTER_PORT")
    got = export_slurm_ranks()
    assert {k: got[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR")} == {
        "RANK": "9", "LOCAL_RANK": "1", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "gpu07"}
    assert 20000 <= int(got["MASTER_PORT"]) <= 60000  # from the job id: the same on every node
    assert {k: os.environ[k] for k in got} == got
    monkeypatch.setenv("SLURM_PROCID", "0")
    monkeypatch.setenv("SLURM_NODEID", "0")
    monkeypatch.setenv("SLURM_LOCALID", "0")
    assert export_slurm_ranks()["MASTER_PORT"] == got["MASTER_PORT"]


def test_launcher_presets_compose_one_rank_per_gpu_on_one_or_two_nodes():
    hydra = compose("train", ["launcher=slurm_gpu", "hydra.launcher.nodes=2"], return_hydra_config=True).hydra.launcher
    assert hydra._target_ == "hydra_plugins.toolsense_slurm.RankedSlurmLauncher"
    assert (hydra.nodes, hydra.tasks_per_node, hydra.gpus_per_node, hydra.mem_gb) == (2, 8, 8, 0)
    assert hydra.signal_delay_s >= 120 and hydra.max_num_timeout >= 1  # a save fits; time limits requeue
    cpu = compose("train", ["launcher=slurm", "hydra.launcher.tasks_per_node=2"], return_hydra_config=True).hydra.launcher
    assert (cpu.nodes, cpu.tasks_per_node, cpu.gpus_per_node) == (1, 2, None) and cpu._target_ == hydra._target_


def test_other_ranks_write_no_hydra_files_and_no_log_file():
    cfg = compose("train", [], return_hydra_config=True)
    assert cfg.hydra.output_subdir == ".hydra" and "file" in cfg.hydra.job_logging.handlers
    quiet_rank(cfg)
    assert cfg.hydra.output_subdir is None
    assert not [h for h in OmegaConf.to_container(cfg.hydra.job_logging.handlers).values() if "filename" in h]
    assert cfg.hydra.job_logging.root.handlers == ["console"]


def test_rank_zero_of_a_job_claims_the_run(tmp_path, monkeypatch):
    """WORLD_SIZE > 1 used to turn locking off: a second job aimed at the run trained into it too."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    rd = RunDir(tmp_path / "run")
    with rd.claim() as first, rd.claim() as second:
        assert first and not second


def test_the_other_ranks_follow_rank_zero_when_the_run_is_held(tmp_path):
    """Two torchrun ranks aimed at a run another process holds: rank 0 is refused naming the holder,
    and rank 1, which never claims, stops with rank 0's reason instead of training into the run."""
    run_dir = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29541", "--tee", "3",
           str(ROOT / "train.py"), *TINY, "experiment=tg", "stage2.enabled=false", "stage1.max_steps=1", f"output_dir={run_dir}"]
    with RunDir(run_dir).claim(doing="training") as held:
        assert held
        out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "another process is training into this folder" in text, text[-3000:]
    assert "rank 0 stopped training: UserError" in text, text[-3000:]  # rank 1 followed rank 0
    assert not (run_dir / "stage1").exists() and not (run_dir / "checkpoints").exists()


def test_one_process_runs_the_rank_zero_work_itself():
    assert on_rank0(lambda: 7) == 7
