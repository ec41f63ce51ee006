"""Stage-1 training throughput: our batching against a padded, unpacked baseline.

Trains SmolLM2-135M (LoRA, as the demo) on the demo catalog's Stage-1 examples (desc2tok +
tok2desc + mcts) for the same number of optimiser steps with the same batch size, once with
random batches padded to their longest and stock TRL's LM head (the baseline) and once with
our data path (``trainer.batching=auto``: length-grouped batches on sdpa/eager, padding-free rows
under flash attention; and the LM head projecting only the labelled positions, which stock TRL
does on Triton devices only). Each mode runs in its own subprocess so its peak RSS is its own. Prints real
(non-pad) tokens per second for both and their ratio; ``--repeats`` runs of each mode,
interleaved, with the best, median and spread of each (benchmarks/timing.py).

``--baseline longest`` (default) pads each random batch to its longest example — the strong
baseline; on the demo catalog's Stage-1 lengths (mean 112, max 181 SmolLM2 tokens) batching
alone cannot beat it by more than 1/0.69 = 1.45x, since random batches are already 69% real
tokens; the rest must come from not projecting unlabelled positions through the 49k-row head.
``--baseline max_length`` pads every batch to trainer.max_length (1024), as scripts with
``padding="max_length"`` do.

    python benchmarks/train_throughput.py                 # SmolLM2, 8 steps of 16
    python benchmarks/train_throughput.py --model tiny_random --steps 4
    python benchmarks/train_throughput.py --smoke       # tiny_random, 3 steps of 4, one run per mode
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from timing import parse_args, stats  # noqa: E402  (benchmarks/timing.py, beside this script)
from tqdm.auto import tqdm  # noqa: E402

SMOKE = {"model": "tiny_random", "steps": 3, "batch": 4, "repeats": 1}
"""``--smoke``: both modes, each in its own process, on the tiny random model."""


def measure(model_name: str, batching: str, steps: int, batch: int) -> dict:
    baseline = batching.startswith("padded")
    pad_to = 1024 if batching == "padded_max_length" else None
    batching = "padded" if pad_to else batching
    from transformers import TrainerCallback

    from toolsense.catalog import load_demo_catalog
    from toolsense.data.examples import to_dataset
    from toolsense.data.memorization import MemorizationConfig, build_memorization_examples
    from toolsense.index import add_index_tokens, build_index
    from toolsense.models import ModelConfig, load_model_and_tokenizer
    from toolsense.training.config import StageSchedule, TrainerConfig, TuningConfig
    from toolsense.training.trainer import ToolsenseSFTTrainer, sft_config
    from toolsense.training.tuning import prepare_trainable

    catalog = load_demo_catalog()
    index = build_index(catalog, "flat")
    examples = build_memorization_examples(catalog, index, MemorizationConfig(formats=["desc2tok", "tok2desc", "mcts"]))
    model, tok = load_model_and_tokenizer(ModelConfig(model_name, dtype="float32"))
    ids = add_index_tokens(index, model, tok)
    data = to_dataset(examples, tok, 1024)
    trainable = prepare_trainable(model, TuningConfig(), ids)
    tcfg = TrainerConfig(effective_batch=batch, per_device_batch=batch, batching=batching, precision="fp32", use_cpu=True,
                         logging_steps=1000, save_steps=100000)
    sched = StageSchedule(max_steps=steps, learning_rate=1e-3, warmup_ratio=0.0)

    class Count(TrainerCallback):
        """Real tokens seen (labels and inputs), excluding the first step (warm-up)."""

        t0 = None

        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 1:
                Count.t0, Count.tok0 = time.perf_counter(), trainer._total_train_tokens

    with tempfile.TemporaryDirectory() as out:
        args = sft_config(tcfg, sched, out, "bench", model.config._attn_implementation)
        args.pad_to_multiple_of = pad_to
        trainer = ToolsenseSFTTrainer(model=trainable.model, args=args, train_dataset=data, processing_class=tok, callbacks=[Count()])
        trainer.compact_lm_head = not baseline  # the baseline is stock TRL: LM head over every position on CPU
        # Count only real tokens: with padding the collator's attention mask has 0 on pads.
        trainer.train()
        elapsed = time.perf_counter() - Count.t0
        tokens = trainer._total_train_tokens - Count.tok0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"batching": batching + (f" to {pad_to}" if pad_to else ""), "steps_timed": steps - 1, "tokens": int(tokens),
            "seconds": round(elapsed, 2),
            "tokens_per_s": round(tokens / elapsed, 1), "peak_rss_mib": round(rss)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2_135m")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ours", default="auto", help="our batching mode (auto | padding_free | length_grouped)")
    ap.add_argument("--baseline", choices=["longest", "max_length"], default="longest")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each mode, interleaved")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = parse_args(ap, SMOKE)
    if a.one:
        print("RESULT " + json.dumps(measure(a.model, a.one, a.steps, a.batch)))
        return
    base_mode = "padded" if a.baseline == "longest" else "padded_max_length"
    modes = (base_mode, a.ours)
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    # interleaved rounds (baseline, ours, baseline, ours, ...): load from elsewhere hits both alike
    with tqdm(total=len(modes) * a.repeats, desc="train throughput", unit="run", dynamic_ncols=True) as bar:
        for r in range(a.repeats):
            for mode in modes:
                bar.set_postfix_str(f"{mode} {r + 1}/{a.repeats}")
                cmd = [sys.executable, __file__, "--model", a.model, "--steps", str(a.steps), "--batch", str(a.batch), "--one", mode]
                out = subprocess.run(cmd, capture_output=True, text=True)
                found = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
                if out.returncode or not found:
                    sys.exit(f"{mode} run failed:\n{out.stderr[-3000:]}")
                runs[mode].append(json.loads(found[0][7:]))
                tqdm.write(json.dumps(runs[mode][-1]))
                bar.update(1)
    tps = {m: [x["tokens_per_s"] for x in runs[m]] for m in modes}
    print(f"model={a.model} steps={a.steps} batch={a.batch}, {a.repeats} interleaved runs each (tokens/s: best, median, spread):")
    for m, label in ((base_mode, f"baseline (padded to {a.baseline})"), (a.ours, f"ours ({a.ours})")):
        st = stats(tps[m])
        print(f"  {label:<32} best {max(tps[m]):9.1f}  median {st['median']:9.1f}  spread {100 * st['spread']:5.1f}%  "
              f"peak RSS {max(x['peak_rss_mib'] for x in runs[m])} MiB")
    best = max(tps[a.ours]) / max(tps[base_mode])
    med = stats(tps[a.ours])["median"] / stats(tps[base_mode])["median"]
    print(f"throughput ratio ours/baseline = {best:.2f}x on the best runs, {med:.2f}x on the medians (target >= 2x)")

if __name__ == "__main__":
    main()
