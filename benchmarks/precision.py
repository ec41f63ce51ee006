"""Training-step speed on CPU, fp32 against bf16 autocast, on the real-tools study's own runs.

Trains the way ``study=tools`` trains its grid (toolsense/conf/study/tools.yaml: its ``common`` overrides
and the grid's model / tuning / seed, experiment=tg: SmolLM2-135M, LoRA r=64 with trainable
embeddings, embedding_lr_scale 2.5, trainer=cpu, batch 16 = 8 x 2 accumulation, max_length 192)
on Stage 1 of catalog=study_tools (1,000 real APIs, desc2tok), through the study's own stage
runner (training/stage.py: StageRunner.setup, then the Trainer's loop) with
``trainer.precision=fp32`` and with ``trainer.precision=bf16``. The second is how toolsense turns
bf16 on: the Trainer's ``bf16=True`` under ``use_cpu``, which Accelerate runs as
``torch.autocast("cpu", dtype=torch.bfloat16)`` around the forward pass over the fp32 master
weights the stage loads (training/trainer.py: master_weights).

Each mode runs in its own subprocess, ``--repeats`` runs per mode interleaved (fp32, bf16, fp32,
bf16, ...), ``--steps`` optimiser steps per run; the first step is warm-up and the rest are timed.
Prints per mode the min and median real (non-pad) tokens per wall second and per CPU second of the
process (with OMP_NUM_THREADS=1 the CPU rate holds still under load from elsewhere), and the ratios
bf16/fp32; the CPU model and its avx512f / avx512_bf16 / amx_bf16 flags; and, as the check that the
modes compute different things, the top-1 agreement of next-token logits on one fixed batch (the
first batch the study's Trainer draws, the same weights, one forward in fp32 and one under the
Trainer's own autocast). A step that takes longer than ``--timeout-per-step`` seconds stops the run,
which is then reported as "slower than X s/step, stopped".

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/precision.py --steps 2 --repeats 2
    python benchmarks/precision.py --smoke     # a quick check of the script: tiny_random, 2 steps, one run per mode
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from timing import parse_args, stats  # noqa: E402  (benchmarks/timing.py, beside this script)
from tqdm.auto import tqdm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "toolsense" / "conf" / "study" / "tools.yaml"
MODES = ("fp32", "bf16")
FLAGS = ("avx512f", "avx512_bf16", "amx_bf16")
LOAD_TIMEOUT_S = 900
"""Seconds a child may take to load the catalog and model before its first step starts."""
SMOKE = {"model": "tiny_random", "steps": 2, "repeats": 1, "timeout_per_step": 300.0}
"""``--smoke``: both modes and the logits check on the tiny random model."""


def study_overrides(model: str, mode: str, steps: int) -> list[str]:
    """train.py overrides of the study's grid run (its ``common`` and the first job of ``sweeps.grid``,
    experiment=tg), less what only evaluation, checkpoints and Stage 2 read, with this benchmark's
    model, precision and step count. The grid is a sweep (``trainer.seed=0,1``, ``experiment=tg,tg_h``):
    Hydra's own sweeper expands it and its first job (seed 0) is taken."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    study = OmegaConf.load(STUDY)
    parsed = OverridesParser.create().parse_overrides([*study.common, *study.sweeps.grid])
    first_job = BasicSweeper.split_arguments(parsed, max_batch_size=None)[0][0]
    keep = [o for o in first_job
            if not o.startswith(("evaluate.", "trainer.save_steps", "trainer.logging_steps", "stage2.", "model=", "experiment="))]
    return keep + [f"model={model}", "experiment=tg", f"trainer.precision={mode}", f"stage1.max_steps={steps}", "stage1.warmup_ratio=0.0",
                   "stage2.enabled=false", "trainer.save_steps=100000", "trainer.logging_steps=100000", "logger=none"]


def stage_runner(model: str, mode: str, steps: int, run_dir: str):
    """The study's Stage-1 StageRunner for this mode, set up (model loaded, Trainer built)."""
    from toolsense.catalog.config import load_from_config
    from toolsense.data.memorization import build_memorization_examples
    from toolsense.index.config import index_from_config
    from toolsense.training.config import register_configs, to_train_config
    from toolsense.training.stage import StageRunner
    from toolsense.utils.compose import compose

    register_configs()
    cfg = to_train_config(compose("train", study_overrides(model, mode, steps)))
    catalog = load_from_config(cfg.catalog)
    index = index_from_config(cfg.index, catalog, None)
    examples = build_memorization_examples(catalog, index, cfg.memorization)
    runner = StageRunner("stage1", cfg, cfg.stage1, index, examples, Path(run_dir))
    runner.setup()
    print("READY " + json.dumps({"examples": len(examples), "formats": list(cfg.memorization.formats),
                                 "precision": str(cfg.trainer.precision), "bf16": runner.trainer.args.bf16}), flush=True)
    return runner


def measure(model: str, mode: str, steps: int) -> dict:
    """One run: ``steps`` optimiser steps; prints ``STEP`` after each, returns the timed steps' rates."""
    from transformers import TrainerCallback

    with tempfile.TemporaryDirectory() as run_dir:
        runner = stage_runner(model, mode, steps, run_dir)
        trainer = runner.trainer
        marks: list[tuple[float, float, int]] = []

        class Clock(TrainerCallback):
            def on_train_begin(self, args, state, control, **kw):
                marks.append((time.perf_counter(), time.process_time(), trainer._total_train_tokens))

            def on_step_end(self, args, state, control, **kw):
                marks.append((time.perf_counter(), time.process_time(), trainer._total_train_tokens))
                (w0, c0, t0), (w1, c1, t1) = marks[-2], marks[-1]
                print(f"STEP {state.global_step} {w1 - w0:.2f} {c1 - c0:.2f} {t1 - t0}", flush=True)

        trainer.add_callback(Clock())
        trainer.train()
        accelerator = trainer.accelerator
        autocast = bool(accelerator.native_amp) and str(accelerator.mixed_precision) == "bf16"
    out = {"mode": mode, "autocast_bf16": autocast, "steps": len(marks) - 1,
           "step_s": [round(b[0] - a[0], 2) for a, b in zip(marks, marks[1:])], "first_step_s": round(marks[1][0] - marks[0][0], 2)}
    # the steps after the first (from the end of step 1 to the end of the last); with one step, that step
    start = marks[1] if len(marks) > 2 else marks[0]
    wall, cpu, tokens = (b - a for a, b in zip(start, marks[-1]))
    out.update(steps_timed=len(marks) - 1 - (len(marks) > 2), warmup_included=len(marks) == 2, tokens=int(tokens),
               seconds=round(wall, 2), cpu_seconds=round(cpu, 2), tokens_per_s=round(tokens / wall, 1),
               tokens_per_cpu_s=round(tokens / cpu, 1))
    return out


def logits_agreement(model: str) -> dict:
    """Top-1 agreement of next-token logits, fp32 vs the Trainer's bf16 autocast, same weights, one
    fixed batch (the first the bf16 run's Trainer draws): over every real position, and over the
    positions whose next token is trained (the completion)."""
    import torch

    with tempfile.TemporaryDirectory() as run_dir:
        runner = stage_runner(model, "bf16", 1, run_dir)
        trainer = runner.trainer
        batch = next(iter(trainer.get_train_dataloader()))
        net = trainer.model.eval()
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask") if k in batch}
        with torch.no_grad():
            t = time.perf_counter()
            fp32 = net(**inputs).logits.float()
            t_fp32 = time.perf_counter() - t
            print("STEP 1 fp32 forward", flush=True)
            t = time.perf_counter()
            with trainer.accelerator.autocast():
                low = net(**inputs).logits
            t_bf16 = time.perf_counter() - t
            print("STEP 2 bf16 forward", flush=True)
    real = inputs["attention_mask"].bool()
    trained = (batch["labels"][:, 1:] != -100) if "labels" in batch else None
    same = fp32.argmax(-1) == low.float().argmax(-1)
    out = {"logits_dtype_bf16": str(low.dtype), "batch": list(inputs["input_ids"].shape),
           "positions": int(real.sum()), "top1_agreement": round(same[real].float().mean().item(), 4),
           "forward_s_fp32": round(t_fp32, 2), "forward_s_bf16": round(t_bf16, 2),
           "max_abs_logit_diff": round((fp32 - low.float())[real].abs().max().item(), 3)}
    if trained is not None:
        mask = trained & real[:, :-1]
        out.update(trained_positions=int(mask.sum()), top1_agreement_trained=round(same[:, :-1][mask].float().mean().item(), 4))
    return out


def cpu_info() -> tuple[str, dict[str, bool]]:
    model, flags = "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return model, {f: f in flags for f in FLAGS}


def run_child(args: list[str], timeout_per_step: float) -> tuple[dict | None, str]:
    """Run this script with ``args`` in a subprocess; kill it when a step takes longer than
    ``timeout_per_step`` (loading has LOAD_TIMEOUT_S). Returns (RESULT or None, what happened)."""
    cmd = [sys.executable, __file__, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    lines: queue.Queue = queue.Queue()
    err: list[str] = []
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put(None)], daemon=True).start()
    threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True).start()
    ready, steps, last = False, 0, time.monotonic()
    while True:
        limit = timeout_per_step if ready else LOAD_TIMEOUT_S
        try:
            line = lines.get(timeout=max(0.0, last + limit - time.monotonic()))
        except queue.Empty:
            proc.kill()
            proc.wait()
            what = (f"slower than {timeout_per_step:g} s/step, stopped in step {steps + 1}" if ready
                    else f"not loaded within {LOAD_TIMEOUT_S} s, stopped")
            return None, what
        if line is None:
            break
        if line.startswith("READY"):
            ready, last = True, time.monotonic()
        elif line.startswith("STEP"):
            steps, last = steps + 1, time.monotonic()
            tqdm.write("    " + line.strip())
        elif line.startswith("RESULT "):
            proc.wait()
            return json.loads(line[7:]), "ok"
    proc.wait()
    return None, f"failed (exit {proc.returncode}):\n{''.join(err)[-3000:]}"


def _report(runs: dict[str, list[dict]], stopped: dict[str, list[str]], key: str, unit: str) -> None:
    rates = {m: [r[key] for r in runs[m] if key in r] for m in MODES}
    for m in MODES:
        if rates[m]:
            st = stats(rates[m])
            print(f"  {m:<5} {unit:<16} min {min(rates[m]):8.1f}  median {st['median']:8.1f}  "
                  f"spread {100 * st['spread']:5.1f}%  (n={st['n']})")
        elif stopped[m]:
            print(f"  {m:<5} {unit:<16} none: every run stopped")
    if rates["fp32"] and rates["bf16"]:
        lo = min(rates["bf16"]) / min(rates["fp32"])
        med = stats(rates["bf16"])["median"] / stats(rates["fp32"])["median"]
        print(f"  bf16/fp32 {unit}: {lo:.2f}x on the minima, {med:.2f}x on the medians")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2_135m")
    ap.add_argument("--steps", type=int, default=3, help="optimiser steps per run (the first is warm-up, untimed)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each mode, interleaved")
    ap.add_argument("--timeout-per-step", type=float, default=600.0,
                    help="seconds one step (or one forward of the logits check) may take before its run is stopped")
    ap.add_argument("--no-logits", action="store_true", help="skip the fp32-vs-bf16 logits check")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = parse_args(ap, SMOKE)
    if a.steps < 1 or a.repeats < 1:
        ap.error("--steps and --repeats must be >= 1")
    if a.one:
        result = logits_agreement(a.model) if a.one == "logits" else measure(a.model, a.one, a.steps)
        print("RESULT " + json.dumps(result), flush=True)
        return
    cpu, flags = cpu_info()
    load = os.getloadavg()
    print(f"CPU: {cpu}; " + ", ".join(f"{f} {'yes' if v else 'no'}" for f, v in flags.items())
          + f"; torch threads OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; "
            f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    stopped: dict[str, list[str]] = {m: [] for m in MODES}
    with tqdm(total=len(MODES) * a.repeats, desc="precision", unit="run", dynamic_ncols=True) as bar:
        for r in range(a.repeats):
            for mode in MODES:
                bar.set_postfix_str(f"{mode} {r + 1}/{a.repeats}")
                result, what = run_child(["--model", a.model, "--steps", str(a.steps), "--one", mode], a.timeout_per_step)
                if result is None:
                    if what.startswith("failed"):
                        sys.exit(f"{mode} run failed: {what}")
                    stopped[mode].append(what)
                    tqdm.write(f"{mode}: {what}")
                else:
                    runs[mode].append(result)
                    tqdm.write(json.dumps(result))
                bar.update(1)
    logits, why = (None, "skipped") if a.no_logits else run_child(["--model", a.model, "--one", "logits"], a.timeout_per_step)
    if why.startswith("failed"):
        sys.exit(f"logits check {why}")
    end = os.getloadavg()
    print(f"model={a.model} study=tools Stage 1 (catalog=study_tools, desc2tok, LoRA, batch 16 = 8 x 2, max_length 192), "
          f"{a.steps} steps per run{' (first untimed)' if a.steps > 1 else ''}, {a.repeats} interleaved runs per mode; "
          f"load average at end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}")
    if a.steps == 1:
        print("  (one step per run: the rates below include that step's warm-up)")
    for m in MODES:
        per_step = [r["step_s"] for r in runs[m]]
        if per_step:
            print(f"  {m:<5} wall s per step, each run: {'; '.join(', '.join(f'{x:.1f}' for x in s) for s in per_step)}"
                  + ("" if m == "fp32" else f"  (autocast bf16 on: {all(r['autocast_bf16'] for r in runs[m])})"))
        for why in stopped[m]:
            print(f"  {m:<5} {why}")
    if stopped["bf16"] and runs["fp32"]:  # the same seed draws the same batches in both modes: step k is the same work
        worst = max(max(r["step_s"]) for r in runs["fp32"])
        print(f"  bf16/fp32 speed < {worst / a.timeout_per_step:.2f}x where bf16 was stopped (fp32's slowest step {worst:.1f} s, "
              f"bf16's > {a.timeout_per_step:g} s on the same batches)")
    _report(runs, stopped, "tokens_per_s", "tokens/wall-s")
    _report(runs, stopped, "tokens_per_cpu_s", "tokens/CPU-s")
    if logits is not None:
        print(f"  logits, fp32 vs bf16 autocast, same weights, one batch {logits['batch']}: top-1 agreement "
              f"{100 * logits['top1_agreement']:.1f}% of {logits['positions']} real positions"
              + (f", {100 * logits['top1_agreement_trained']:.1f}% of {logits['trained_positions']} trained positions"
                 if "top1_agreement_trained" in logits else "")
              + f"; max |logit diff| {logits['max_abs_logit_diff']}; one forward {logits['forward_s_fp32']} s fp32, "
                f"{logits['forward_s_bf16']} s bf16")
    else:
        print(f"  logits check: {why}")


if __name__ == "__main__":
    main()
