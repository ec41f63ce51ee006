"""DeepSpeed for real on CPU: two processes (torchrun, DeepSpeed's CPU accelerator with its
shared-memory comm op, compiled once with gcc) train tiny_random under our ZeRO configs. The
checkpoints are DeepSpeed's (one optimizer shard per rank), the saved model has trained virtual
rows (and, unless LoRA pins tuning.embedding_rows=virtual, trained base rows), and the stage
folders load as plain HF models."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch

from tests.training.conftest import ROOT, TINY

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="DeepSpeed's CPU comm op is compiled with gcc")


def _group_lrs(obj) -> list[float] | None:
    """The per-group base learning rates saved with a checkpoint (a scheduler's ``base_lrs`` or
    an optimizer's ``param_groups``), wherever in the state they sit."""
    if isinstance(obj, dict):
        if "base_lrs" in obj:
            return [float(x) for x in obj["base_lrs"]]
        if isinstance(obj.get("param_groups"), list) and obj["param_groups"] and "lr" in obj["param_groups"][0]:
            return [float(g.get("initial_lr", g["lr"])) for g in obj["param_groups"]]
        for v in obj.values():
            if (found := _group_lrs(v)) is not None:
                return found
    return None


@pytest.mark.parametrize("trainer,tuning,rows,scale,port", [("ds_zero2", "lora", "virtual", 1.0, 29561),
                                                            # slow: LoRA + all rows + the scale under ZeRO: the two
                                                            # runs beside it pin rows=all, the scale and LoRA's merge
                                                            pytest.param("ds_zero2", "lora", "all", 2.5, 29563,
                                                                         marks=pytest.mark.slow),
                                                            ("ds_zero3", "full", "all", 2.5, 29562)])
def test_zero_on_two_cpu_processes(tmp_path, trainer, tuning, rows, scale, port):
    from toolsense.catalog import load_catalog
    from toolsense.index import ToolIndex, add_index_tokens
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port), str(ROOT / "train.py"),
           *TINY, "experiment=tg", f"trainer={trainer}", f"tuning={tuning}", f"tuning.embedding_rows={rows}", "trainer.use_cpu=true",
           "trainer.gradient_checkpointing=false",
           "trainer.effective_batch=8", "trainer.per_device_batch=4", "stage1.max_steps=3", "stage2.enabled=false",
           "trainer.save_steps=3", "stage1.learning_rate=1e-2", f"tuning.embedding_lr_scale={scale}", f"output_dir={run_dir}"]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "batch 4 per device x 1 accumulation x 2 processes = 8" in out.stdout + out.stderr
    step_dir = run_dir / "checkpoints" / "stage1" / "checkpoint-3" / "global_step3"
    shards = sorted(p.name for p in step_dir.iterdir())
    assert [s for s in shards if "optim_states" in s] == ["zero_pp_rank_0_mp_rank_00_optim_states.pt",
                                                         "zero_pp_rank_1_mp_rank_00_optim_states.pt"]
    # tuning.embedding_lr_scale reaches DeepSpeed's optimizer as its own parameter group
    files = [step_dir.parent / "scheduler.pt", step_dir / "zero_pp_rank_0_mp_rank_00_optim_states.pt",
             step_dir / "mp_rank_00_model_states.pt"]
    found = [_group_lrs(torch.load(f, map_location="cpu", weights_only=False)) for f in files if f.exists()]
    lrs = next((x for x in found if x is not None), None)
    assert lrs is not None and max(lrs) == pytest.approx(1e-2 * scale) and min(lrs) == pytest.approx(1e-2)
    if scale != 1.0:
        assert f"embedding_lr_scale={scale:g}: " in out.stdout + out.stderr and "(DeepSpeed)" in out.stdout + out.stderr

    base, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    n_old = len(tok)
    index = ToolIndex.load(run_dir / "index.json", load_catalog(ROOT / "tests" / "assets" / "training" / "tools.jsonl"))
    add_index_tokens(index, base, tok)
    trained, _ = load_model_and_tokenizer(ModelConfig(str(run_dir / "stage1"), dtype="float32"))
    before, after = base.get_input_embeddings().weight, trained.get_input_embeddings().weight
    assert after.shape == before.shape  # ZeRO-3 gathered the full embedding, not a shard
    n = len(tok)  # rows past it pad the matrix to a multiple of 64
    assert (after[n_old:n] - before[n_old:n]).abs().amax(dim=1).gt(1e-4).all()  # every tool's row trained
    if rows == "virtual":  # the gradient mask on the embedding holds under ZeRO's own gradient hooks
        assert torch.equal(after[:n_old], before[:n_old])
    else:  # LoRA with trainable embeddings, or full fine-tuning: base rows train and are saved
        assert not torch.equal(after[:n_old], before[:n_old])
    name = "model.layers.0.mlp.down_proj.weight"
    moved = not torch.equal(dict(trained.named_parameters())[name], dict(base.named_parameters())[name])
    assert moved  # LoRA is merged into the saved model; full fine-tuning moves the weight itself


@pytest.mark.slow
def test_zero3_then_stage2_then_evaluation_in_one_process(tmp_path):
    """Stage 1 and Stage 2 under ZeRO-3, then train.py's evaluation, all in the same two processes:
    the stage cleanup lets go of Accelerate's DeepSpeed state (training/trainer.py:
    release_deepspeed_state), so Stage 2 and the evaluation load plain, whole models (under a
    lingering ZeRO-3 config ``from_pretrained`` partitioned them and refused a ``device_map``)."""
    import json

    from tests.training.conftest import ASSETS

    run_dir = tmp_path / "run"
    evaluate = ["evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={ASSETS / 'queries.jsonl'}",
                "evaluate.settings.benchmarks.generated.split=test", "evaluate.decoding=beam10", "evaluate.settings.metrics.resamples=100"]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29564", str(ROOT / "train.py"),
           *[o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps"))], "experiment=tg", "trainer=ds_zero3",
           "tuning=full", "trainer.use_cpu=true", "trainer.gradient_checkpointing=false", "trainer.effective_batch=8",
           "trainer.per_device_batch=4", "stage1.max_steps=2", "stage2.max_steps=2", "stage2.sources.0.split=train", *evaluate,
           f"output_dir={run_dir}"]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    assert (run_dir / "stage1" / "config.json").is_file() and (run_dir / "stage2" / "config.json").is_file()
    res = json.loads((run_dir / "eval" / "generated" / "model" / "results.json").read_text())
    assert res["n"] == 3 and 0.0 <= res["metrics"]["Rc@1"]["value"] <= 1.0
    summary = [json.loads(x)["summary"] for x in (run_dir / "metrics.jsonl").read_text().splitlines() if '"summary"' in x][-1]
    assert summary["stage1"]["global_step"] == 2 and summary["stage2"]["global_step"] == 2
