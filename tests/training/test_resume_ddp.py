"""The real CLI: a run killed mid-Stage-1 resumes from its checkpoint when the same command is
rerun; two CPU processes (torchrun, gloo) train one model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.training.conftest import ROOT, TINY

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}


def _summary(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r["summary"] for r in rows if "summary" in r][-1], rows


def test_killed_run_resumes_from_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    args = [*TINY, "experiment=tg", "stage2.enabled=false", "stage1.max_steps=30", "trainer.save_steps=2", f"output_dir={run_dir}"]
    cmd = [sys.executable, str(ROOT / "train.py"), *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    ckpt = run_dir / "checkpoints" / "stage1" / "checkpoint-2" / "embedding_rows.pt"
    deadline = time.time() + 240
    while not ckpt.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert ckpt.exists(), proc.stderr.read().decode()[-3000:] if proc.poll() is not None else "no checkpoint in time"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run_dir / "stage1").exists(), "run finished before it was killed"

    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    summary, rows = _summary(run_dir)
    resumed_at = int(summary["stage1"]["resumed_from"].rsplit("-", 1)[-1])
    assert resumed_at % 2 == 0 and 2 <= resumed_at < 30
    assert summary["stage1"]["global_step"] == 30
    assert (run_dir / "stage1" / "model.safetensors").exists()
    logged = [r["step"] for r in rows if "train/stage1/loss" in r]
    assert logged[-(30 - resumed_at):] == list(range(resumed_at + 1, 31))  # the rerun trained only the rest
    assert logged == list(range(1, 31))  # each step once: the killed run's rows after the checkpoint were replaced

    again = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "trained and evaluated earlier under this config (done.json); skipped" in again.stdout + again.stderr
    (run_dir / "done.json").unlink()  # without the run's mark, the stage folder itself is what is skipped
    again = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and f"stage1: {run_dir / 'stage1'} exists, skipping" in again.stdout + again.stderr
    other = subprocess.run([*cmd, "stage1.learning_rate=1"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert other.returncode != 0 and "holds a different config (stage1.learning_rate differ)" in other.stdout + other.stderr


def test_two_process_gloo(tmp_path):
    run_dir = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29533", str(ROOT / "train.py"),
           *TINY, "experiment=tg", "stage2.enabled=false", "stage1.max_steps=2", f"output_dir={run_dir}"]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr[-4000:]
    summary, _ = _summary(run_dir)
    assert summary["stage1"]["global_step"] == 2
    assert "batch 2 per device x 1 accumulation x 2 processes = 4" in out.stdout + out.stderr
    assert (run_dir / "stage1" / "model.safetensors").exists() and not (run_dir / "stage1.tmp").exists()


def test_several_processes_need_an_explicit_output_dir():
    """Under torchrun each process would stamp its own Hydra directory: refused, naming the field."""
    env = {**ENV, "WORLD_SIZE": "2", "RANK": "0"}
    for script in ("train.py", "evaluate.py"):
        out = subprocess.run([sys.executable, str(ROOT / script), "model=tiny_random"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode != 0 and "output_dir: set it explicitly" in out.stderr, (script, out.stderr[-2000:])
