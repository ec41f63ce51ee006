"""The GPU path on one accelerator, in one self-contained run (target: under 8 minutes on one H200).

    python3 benchmarks/gpu_check.py --out gpu_check.json       # on the GPU machine, from the repo root
    python benchmarks/gpu_check.py --smoke                      # tiny shapes, CPU: does it run?

Needs only torch, transformers, tokenizers, peft, numpy and tqdm (all on the device image) and the
repo itself: no weights, catalog or encoder travel. Real shapes, random weights:
- **train**: TG-3FM's Stage-1 mix (desc2tok, tok2desc, mcts-like prompts, synthetic text) on a
  Qwen2.5-0.5B-shaped model with all 46,984 ToolBench-sized virtual tokens added by
  ``add_index_tokens`` on the GPU (padded to a multiple of 64), LoRA r=64 on every linear layer
  + the trainable embedding (``embedding_lr_scale`` 2.5 as its own AdamW group), bf16 autocast
  over fp32 master weights (``training.trainer.master_weights``); real tokens/s and peak memory.
  A plain torch loop over PEFT — TRL's SFTTrainer around it is tests/training/test_cuda_step.py.
- **decode**: the pooled-G1-sized benchmark (474 queries of G1's length) through the
  ``Retriever`` at beam 50, constrained (flat fast path) + free-form, at batch 8 / 32 / 64:
  seconds per query, peak memory; and at ``decoding.batch_size=auto``: the size its rule picks
  on this device, the memory the rule plans beside the measured peak (less the weights) per
  batch size; then the same search on a Llama-3-8B-shaped model.
Each timed side runs ``--repeats`` times interleaved with the others (benchmarks/timing.py):
min, median and spread. Everything printed is also written to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # the repo is not installed on the device machine
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from timing import interleaved, stats  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

SHAPES = {  # (hidden, intermediate, layers, heads, kv heads, base vocabulary)
    "qwen2.5-0.5b": (896, 4864, 24, 14, 2, 151_643),
    "llama3-8b": (4096, 14336, 32, 32, 8, 128_000),
    "tiny": (64, 128, 2, 4, 2, 2_000),
}


@dataclass
class Search:
    """What the Retriever reads (decoding.retrieval.SearchSettings)."""

    beam_width: int = 50
    batch_size: int | str = 8  # or "auto"
    free_form: bool = True
    fast_flat: bool = True
    share_prefix: bool = True
    max_new_tokens: Optional[int] = None
    length_penalty: float = 1.0


def word_tokenizer(n_words: int):
    """A word-level tokenizer of ``n_words`` words (w0, w1, ...) with ChatML: a real vocabulary
    size without shipping one."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from toolsense.models.embedded import CHATML_TEMPLATE

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials + [f"w{i}" for i in range(n_words - len(specials))])}
    bpe = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<unk>")
    tok.chat_template = CHATML_TEMPLATE
    return tok


def words(rng, n: int, vocab: int) -> str:
    return " ".join(f"w{i}" for i in rng.integers(0, vocab - 8, n))


def build_model(shape: str, tok, dtype: torch.dtype, device: str):
    """A randomly initialised causal LM of ``shape`` on ``device`` (Qwen2 or Llama layout)."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    hidden, inter, layers, heads, kv, _ = SHAPES[shape]
    qwen = shape.startswith("qwen") or shape == "tiny"
    cls, cfg_cls = (Qwen2ForCausalLM, Qwen2Config) if qwen else (LlamaForCausalLM, LlamaConfig)
    cfg = cfg_cls(vocab_size=len(tok), hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                  num_attention_heads=heads, num_key_value_heads=kv, tie_word_embeddings=qwen, max_position_embeddings=4096,
                  eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, attn_implementation="sdpa")
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = cls(cfg)
    finally:
        torch.set_default_dtype(old)
    return model


def catalog_and_index(n_tools: int, rng, vocab: int):
    from toolsense.catalog import Catalog, Tool
    from toolsense.index import build_index

    tools = [Tool.from_name(f"S{i // 6}&&api_{i}", api_description=words(rng, 20, vocab)) for i in range(n_tools)]
    catalog = Catalog.from_tools((t, f"synthetic:{i}") for i, t in enumerate(tools))
    return catalog, build_index(catalog, "flat")


def add_tokens(model, tok, index) -> dict:
    from toolsense.index import add_index_tokens

    t = time.perf_counter()
    add_index_tokens(index, model, tok)
    return {"seconds": round(time.perf_counter() - t, 2), "rows": model.get_input_embeddings().weight.shape[0], "tokens": len(tok)}


def peak_gib() -> float:
    return round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else 0.0


def stage1_batches(tok, index, catalog, rng, vocab: int, batch: int, n: int):
    """``n`` batches of TG-3FM-like examples: (input ids, mask, labels) right-padded; labels only on
    the completion (a tool token + EOS, or a description)."""
    from toolsense.data.prompts import render_prompt

    names, out = list(index.paths), []
    for _ in range(n):
        rows = []
        for j in range(batch):
            name = names[int(rng.integers(len(names)))]
            token = index.paths[name][0]
            kind = j % 3
            if kind == 0:  # desc2tok
                prompt, answer = catalog[name].api_description, token
            elif kind == 1:  # tok2desc
                prompt, answer = f"describe {token}", catalog[name].api_description
            else:  # mcts: 10 candidate tokens
                cands = [index.paths[names[int(k)]][0] for k in rng.integers(0, len(names), 9)] + [token]
                prompt, answer = words(rng, 30, vocab) + " " + " ".join(cands), token
            p = tok(render_prompt(tok, [{"role": "user", "content": prompt}]), add_special_tokens=False)["input_ids"]
            a = tok(answer, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            rows.append((p + a, [-100] * len(p) + a))
        width = max(len(x) for x, _ in rows)
        ids = torch.full((batch, width), tok.pad_token_id)
        mask = torch.zeros((batch, width), dtype=torch.long)
        labels = torch.full((batch, width), -100)
        for i, (x, y) in enumerate(rows):
            ids[i, : len(x)], mask[i, : len(x)], labels[i, : len(y)] = torch.tensor(x), 1, torch.tensor(y)
        out.append((ids, mask, labels))
    return out


def lora_trainer(model, lr: float = 2e-5, scale: float = 2.5):
    """LoRA r=64 on every linear layer + the (tied) embedding trainable, as tuning=lora with
    embedding_rows=all; AdamW with the embedding in its own group at ``scale`` x lr."""
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(model, LoraConfig(r=64, lora_alpha=128, target_modules="all-linear", task_type="CAUSAL_LM"))
    emb = peft_model.get_base_model().get_input_embeddings().weight
    emb.requires_grad_(True)
    rest = [p for p in peft_model.parameters() if p.requires_grad and p is not emb]
    opt = torch.optim.AdamW([{"params": rest, "lr": lr}, {"params": [emb], "lr": lr * scale, "weight_decay": 0.0}], lr=lr)
    return peft_model, opt


def train_step(model, opt, ids, mask, labels, device) -> int:
    """One optimiser step under bf16 autocast, the LM head over labelled positions only; returns
    the real (non-pad) tokens it trained on."""
    ids, mask, labels = ids.to(device), mask.to(device), labels.to(device)
    with torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=torch.device(device).type == "cuda"):
        hidden = model.get_base_model().model(input_ids=ids, attention_mask=mask).last_hidden_state
        sel = labels[:, 1:] != -100
        logits = model.get_base_model().lm_head(hidden[:, :-1][sel])
        loss = torch.nn.functional.cross_entropy(logits.float(), labels[:, 1:][sel])
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g["params"]], 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return int(mask.sum())


def check_train(args, device, tok, catalog, index, rng, vocab) -> dict:
    """Stage-1 steps on the 0.5B shape: tokens/s (interleaved repeats of ``--train-steps``)."""
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    model = build_model(args.small, tok, torch.float32, device)  # fp32 master weights, bf16 autocast
    added = add_tokens(model, tok, index)
    model, opt = lora_trainer(model)
    batches = stage1_batches(tok, index, catalog, rng, vocab, args.train_batch, args.train_steps)
    seen = {"tokens": 0}

    def steps() -> None:
        for ids, mask, labels in batches:
            seen["tokens"] += train_step(model, opt, ids, mask, labels, device)

    times = interleaved({"train": steps}, args.repeats, desc="train (0.5B shape, LoRA, bf16)")["train"]
    per_run = seen["tokens"] / (args.repeats + 1)  # the warm-up run counted too
    emb = model.get_base_model().get_input_embeddings().weight
    out = {"model": args.small, "add_tokens": added, "steps_per_run": args.train_steps, "batch": args.train_batch,
           "master_dtype": str(emb.dtype), "tokens_per_s": {k: round(per_run / v, 1) for k, v in
                                                             (("best", min(times)), ("median", stats(times)["median"]))},
           "seconds": stats(times), "peak_gib": peak_gib()}
    del model, opt
    return out


def check_decode(shape: str, args, device, tok, index, queries, dtype) -> dict:
    """Constrained + free-form retrieval of ``queries`` at each batch size and at ``auto``:
    s/query, and each side's peak memory beside what ``decoding.batching``'s rule plans for it."""
    from toolsense.catalog import Query
    from toolsense.data.prompts import PromptConfig
    from toolsense.decoding.batching import bytes_per_query
    from toolsense.decoding.retrieval import Retriever, encode
    from toolsense.index import build_trie

    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    model = build_model(shape, tok, dtype, device).eval()
    added = add_tokens(model, tok, index)
    trie = build_trie(index, tok)
    qs = [Query(str(i), q, ("x",)) for i, q in enumerate(queries)]
    weights_gib = round(torch.cuda.memory_allocated() / 2**30, 2) if device == "cuda" else 0.0
    sides, peaks, plan = {}, {}, {}
    for b in [*args.batches, "auto"]:
        r = Retriever(model, tok, trie, index.depth(), PromptConfig(), Search(beam_width=args.beam, batch_size=b))
        longest = max(len(s) for s in encode(tok, [r.prompt(q) for q in qs]))
        size = r.batch_size(longest)
        name = f"batch {b}" if b != "auto" else f"batch auto={size}"
        per = bytes_per_query(model, r.n_tokens, args.beam, longest, index.depth() + 1)
        plan[name] = {"batch": size, "planned_gib": round(size * per / 2**30, 2)}

        def side(r=r, name=name):
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            list(r.run(qs))
            peaks[name] = max(peaks.get(name, 0.0), peak_gib())

        sides[name] = side
    times = interleaved(sides, args.repeats, desc=f"decode ({shape}, B={args.beam})")
    for name in plan:  # the rule counts the search's own memory: measured peak less the weights (head copy included)
        plan[name]["measured_gib"] = round(peaks[name] - weights_gib, 2)
    out = {"model": shape, "dtype": str(dtype), "add_tokens": added, "queries": len(qs), "beam": args.beam,
           "s_per_query": {k: {m: round(v if m == "spread" else v / len(qs), 5) for m, v in stats(ts).items() if m != "n"}
                           for k, ts in times.items()},
           "memory_by_batch": plan, "weights_gib": weights_gib, "peak_gib": max(peaks.values())}
    del model
    return out


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny shapes and sizes (a CPU check that the script runs)")
    ap.add_argument("--tools", type=int, default=46_984)
    ap.add_argument("--queries", type=int, default=474)
    ap.add_argument("--beam", type=int, default=50)
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=5)
    ap.add_argument("--train-batch", type=int, default=16)
    ap.add_argument("--no-8b", action="store_true", help="skip the 8B-shape search")
    ap.add_argument("--out", help="write the results as JSON here")
    a = ap.parse_args()
    a.small, a.large = ("tiny", "tiny") if a.smoke else ("qwen2.5-0.5b", "llama3-8b")
    if a.smoke:
        a.tools, a.queries, a.beam, a.batches, a.repeats, a.train_steps, a.train_batch = 300, 12, 5, [4, 8], 2, 2, 4
    return a


def main() -> None:
    import numpy as np

    args = parse()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    res: dict = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
                 "date": time.strftime("%Y-%m-%d"), "args": {k: v for k, v in vars(args).items() if k != "out"}}
    t0 = time.perf_counter()
    for part in tqdm(["train", "decode-small", "decode-8b"], desc="gpu_check", unit="part"):
        rng = np.random.default_rng(0)
        shape = args.small if part != "decode-8b" else args.large
        vocab = SHAPES[shape][5]
        tok = word_tokenizer(vocab)
        catalog, index = catalog_and_index(args.tools, rng, vocab)
        queries = [words(rng, int(rng.integers(40, 90)), vocab) for _ in range(args.queries)]  # G1 queries' length
        if part == "train":
            res[part] = check_train(args, device, tok, catalog, index, rng, vocab)
        elif part == "decode-small" or not args.no_8b:
            res[part] = check_decode(shape, args, device, tok, index, queries, dtype)
        tqdm.write(json.dumps({part: res.get(part)}, default=str))
        res["wall_s"] = round(time.perf_counter() - t0, 1)
        if args.out:  # after every part: a run cut short by its time limit keeps what it measured
            Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    print(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
