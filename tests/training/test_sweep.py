"""The ablation in one command, for real: a Hydra -m sweep of train.py over two experiments on
tiny_random, each job evaluating its own run (evaluate.benchmarks=..., typed), and the sweep ending with
one comparison table (the CompareAfterSweep callback) — with Hydra's basic launcher and with
submitit's local executor, the machinery of launcher=slurm."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.training.conftest import ASSETS, ROOT, TINY

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false"}


@pytest.mark.parametrize("launcher", ["local", "submitit_local"])  # submitit_local: the Slurm launcher's machinery
def test_sweep_trains_evaluates_and_compares(tmp_path, launcher):
    sweep = tmp_path / "sweep"
    evaluate = ["evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={ASSETS / 'queries.jsonl'}",
                "evaluate.settings.benchmarks.generated.split=test", "evaluate.decoding=beam10", "evaluate.settings.metrics.resamples=100"]
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", *[o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps"))],
           "stage1.max_steps=2", "stage2.max_steps=2", "experiment=tg,tg_5fm", "stage2.sources.0.split=train", *evaluate,
           f"hydra.sweep.dir={sweep}", f"launcher={launcher}",
           "hydra.callbacks.compare.metrics=[Rc@1,Rf@1,IS@1,Rc@10,Rf@10]",
           f"evaluate.drift={launcher == 'local'}"]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    runs = sorted(p.name for p in sweep.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert runs == ["0_tg-lora", "1_tg_5fm-lora"]
    for run in runs:
        res = json.loads((sweep / run / "eval" / "generated" / "model" / "results.json").read_text())
        assert res["n"] == 3 and res["source"]["run"] == "../../.."  # the run, relative to the results file
        assert 0.0 <= res["metrics"]["Rc@1"]["value"] <= 1.0
    table = (sweep / "comparison.md").read_text().splitlines()
    assert table[0].startswith("| system | generated Rc@1 | generated Rf@1 | generated IS@1 | generated Rc@10 | generated Rf@10 |")
    rows = table[2:table.index("")] if "" in table else table[2:]  # the significance legend follows a blank line
    assert [row.split(" | ")[0] for row in rows] == ["| tg-lora", "| tg_5fm-lora"]
    comp = json.loads((sweep / "comparison.json").read_text())
    if launcher == "local":  # evaluate.drift=true: base -> stage1 -> stage2 drift per run, in the same rows
        drift = comp["cells"]["tg-lora"]
        assert drift["drift base->stage1 virtual"]["value"] > 0 and drift["drift stage1->stage2 virtual"]["value"] > 0
        # LoRA with trainable embeddings (tuning.embedding_rows=all): base-vocabulary rows drift too, less than the
        # virtual rows relative to their norms; the table carries the run's own drift.json values
        run_drift = json.loads((sweep / runs[0] / "eval" / "drift" / "drift.json").read_text())["pairs"][0]["input"]
        assert 0 < drift["drift base->stage1 base"]["value"] < drift["drift base->stage1 virtual"]["value"]
        assert drift["drift base->stage1 base"]["value"] == pytest.approx(run_drift["base_vocab"])
        assert (sweep / runs[0] / "eval" / "drift" / "drift.png").exists()
    else:
        assert not any(c.startswith("drift ") for c in comp["columns"])
    got = comp["cells"]["tg_5fm-lora"]["generated Rc@1"]["value"]
    assert got == json.loads((sweep / runs[1] / "eval" / "generated" / "model" / "results.json").read_text())["metrics"]["Rc@1"]["value"]


def test_a_run_directory_in_use_is_refused_or_skipped(tmp_path):
    """Two processes must never train into one run directory: while another holds it, train.py
    stops naming the holder (pid, host), with TOOLSENSE_BUSY=skip (reproduce.py's workers) skips it,
    and refuses a value of TOOLSENSE_BUSY it does not know (issue 38: the holder went unnamed and
    an invalid value was taken for ``fail``)."""
    import socket

    from toolsense.utils.rundir import RunDir

    run = tmp_path / "run"
    cmd = [sys.executable, str(ROOT / "train.py"), *TINY, f"output_dir={run}"]
    with RunDir(run).claim(doing="training") as held:  # as train.py holds it
        assert held
        refused = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
        skipped = subprocess.run(cmd, cwd=ROOT, env={**ENV, "TOOLSENSE_BUSY": "skip"}, capture_output=True, text=True, timeout=300)
        invalid = subprocess.run(cmd, cwd=ROOT, env={**ENV, "TOOLSENSE_BUSY": "later"}, capture_output=True, text=True, timeout=300)
    holder = f"pid {os.getpid()} on {socket.gethostname()}"
    assert refused.returncode != 0 and f"{run}: another process is training into this folder ({holder}" in refused.stderr
    assert skipped.returncode == 0 and f"{holder} (" in skipped.stdout + skipped.stderr
    assert "is training into this folder; skipped (TOOLSENSE_BUSY=skip)" in skipped.stdout + skipped.stderr
    assert invalid.returncode != 0 and "TOOLSENSE_BUSY='later': choose from ['fail', 'skip', 'wait']" in invalid.stderr
    assert not (run / "config.yaml").exists()  # none touched the run


def test_toolsense_busy_wait_waits_for_the_holder_then_goes_on(tmp_path):
    """TOOLSENSE_BUSY=wait blocks until the holder is gone, saying whom it waits for, then goes on
    into the run (issue 38: train.py failed instead). The run holds another config, so what it does
    once it holds the run is refuse that: proof it got past the lock, in seconds, not a training."""
    import threading
    import time

    from toolsense.utils.rundir import RunDir

    run, lines = tmp_path / "run", []
    run.mkdir()
    (run / "config.yaml").write_text("model: {name_or_path: another}\n")
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    cmd = [sys.executable, str(ROOT / "train.py"), *TINY, f"output_dir={run}"]
    with RunDir(run).claim() as held:
        assert held
        proc = subprocess.Popen(cmd, cwd=ROOT, env={**ENV, "TOOLSENSE_BUSY": "wait"}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        deadline = time.time() + 120
        while not any("waiting for" in ln for ln in lines) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.5)
        assert proc.poll() is None, "".join(lines)[-3000:]  # still waiting while the run is held
        time.sleep(1)
        assert proc.poll() is None
    assert proc.wait(timeout=300) != 0
    reader.join(timeout=10)
    out = "".join(lines)
    assert f"{run}: waiting for pid {os.getpid()} on " in out and "(TOOLSENSE_BUSY=wait)" in out
    assert f"{run / 'config.yaml'} holds a different config" in out  # what it found once it held the run


def test_a_finished_run_is_skipped_even_without_its_model_folders(tmp_path):
    """Rerunning a finished run under the same config redoes nothing, not even where its model
    folders are gone (deleted for disk, or a results archive unpacked elsewhere): done.json
    records the config it ended under. The logger is not part of that config."""
    run = tmp_path / "run"
    cmd = [sys.executable, str(ROOT / "train.py"), *TINY, f"output_dir={run}"]
    first = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    assert (run / "done.json").is_file() and (run / "stage2" / "config.json").is_file()
    metrics = (run / "metrics.jsonl").read_text()
    for stage in ("stage1", "stage2", "checkpoints"):
        shutil.rmtree(run / stage, ignore_errors=True)
    again = subprocess.run(cmd + ["logger.group=another"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "trained and evaluated earlier under this config (done.json); skipped" in again.stdout + again.stderr
    assert not (run / "stage1").exists() and not (run / "stage2").exists()  # nothing retrained
    assert (run / "metrics.jsonl").read_text() == metrics
