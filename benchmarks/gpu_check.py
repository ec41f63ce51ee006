"""The GPU path on one accelerator, in one self-contained run (target: under 8 minutes on one H200).

    benchmarks/gpu_check.sh --out gpu_check.json        # on the GPU machine: installs gpu-wheels/ offline, then this
    python benchmarks/gpu_check.py --smoke              # tiny shapes, CPU: does it run? (tests/test_gpu_check.py)

Needs torch, transformers, tokenizers, peft, accelerate, numpy and tqdm (all on the device image:
:data:`ON_THE_IMAGE`) and the repo's own imports the image lacks (hydra-core, omegaconf, trl, datasets, ...:
:data:`CARRIED`, ``make gpu-wheels``); before any of them is imported, :func:`guard` names a missing one and
exits 2. No weights, catalog or encoder travel. Real shapes, random weights. The default parts (``--parts``):
- **train-8b**: one LoRA step (two, the first warming up) on a Llama-3-8B shape with all 46,984
  ToolBench-sized virtual tokens, as ``trainer=gpu`` trains it now: frozen base in bf16, what
  trains in fp32 (``tuning.prepare_trainable(upcast=True)``), gradient checkpointing, examples of
  ``--train-tokens`` (1,024) tokens; the memory plan (``training/memory.py``) printed before the
  first step beside the measured peak.
- **search-8b**: constrained beam search at B=50 over the 46,984 tools on the same shape, flat
  (one decode step, ``fast_flat``) and hierarchical (``index=structural``), at each
  ``decoding.head_precision`` (fp32, tf32, bf16): ms per query split into prefill, decode and the
  LM head (timed inside both), and each precision's rankings against fp32's up to near-ties.
- **rankings-tiny**: the same tiny fp32 model's rankings on the GPU and on the CPU (exactly equal,
  and equal up to near-ties).
- **train-ranks**: train.py's training path (tiny_random, Stage 1 + Stage 2, LoRA) in a process group
  joined as one Slurm task of ``launcher=slurm_gpu`` joins it: the launcher's rank setup (``export_slurm_ranks``)
  turns a one-task Slurm environment into the rank variables, then ``env://``, NCCL, at world size 1.
Older parts, by name: **train-0.5b** (tokens/s of the Stage-1 mix on a Qwen2.5-0.5B shape) and
**decode-0.5b** / **decode-8b** (retrieval at batch 8 / 32 / 64 and ``auto``, memory planned vs
measured). Every part's result (or its error) is written to ``--out`` as soon as it ends; parts
left when ``--budget-s`` has passed are recorded as skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # the repo is not installed on the device machine
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ON_THE_IMAGE = ("torch", "transformers", "tokenizers", "peft", "accelerate", "numpy", "tqdm")
"""What the device image has (Python 3.12; docs/guides/gpu.md)."""
CARRIED = ("omegaconf", "hydra", "trl", "datasets", "unidecode", "submitit")
"""What the parts import through toolsense that the image lacks: gpu-wheels/ (``make gpu-wheels``), which
gpu_check.sh installs offline before this script runs."""


def guard(names=ON_THE_IMAGE + CARRIED) -> None:
    """Before any third-party import: every module of ``names`` can be found, else one line naming the missing
    ones and exit 2 (not a traceback minutes in)."""
    def missing(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is None
        except (ImportError, ValueError):
            return True

    gone = [n for n in names if missing(n)]
    if gone:
        where = ("the device image's own package(s) " if set(gone) & set(ON_THE_IMAGE) else "") + "missing: " + ", ".join(gone)
        print(f"gpu_check: {where}; the carried ones come from gpu-wheels/ (make gpu-wheels; python benchmarks/gpu_wheels.py "
              "--extra NAME==VERSION adds one), installed by benchmarks/gpu_check.sh", file=sys.stderr)
        sys.exit(2)


guard()  # first: a missing package is named before anything imports it

import torch  # noqa: E402
from timing import interleaved, stats  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

from toolsense.decoding.config import DecodingConfig  # noqa: E402  (what the Retriever reads)

SHAPES = {  # (hidden, intermediate, layers, heads, kv heads, base vocabulary)
    "qwen2.5-0.5b": (896, 4864, 24, 14, 2, 151_643),
    "llama3-8b": (4096, 14336, 32, 32, 8, 128_000),
    "tiny": (64, 128, 2, 4, 2, 2_000),
}


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
        dec = DecodingConfig(beam_width=args.beam, batch_size=b)
        r = Retriever(model, tok, trie, index.depth(), PromptConfig(), dec)
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


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def check_train_8b(args, device) -> dict:
    """One LoRA step on the 8B shape (see the module doc): the plan printed first, then the peak."""
    import numpy as np

    from toolsense.index import add_index_tokens
    from toolsense.training.config import TrainerConfig, TuningConfig
    from toolsense.training.memory import Shape, memory_plan
    from toolsense.training.tuning import prepare_trainable

    rng, vocab = np.random.default_rng(0), SHAPES[args.large][5]
    tok = word_tokenizer(vocab)
    _, index = catalog_and_index(args.tools, rng, vocab)
    model = build_model(args.large, tok, torch.bfloat16 if device == "cuda" else torch.float32, device)
    ids = add_index_tokens(index, model, tok)
    tuning = TuningConfig()  # LoRA r=64 on every linear layer, every embedding row trainable
    plan = memory_plan(Shape.from_config(model.config), tuning,
                       TrainerConfig(per_device_batch=args.plan_batch, max_length=args.train_tokens, gradient_checkpointing=True),
                       bf16=device == "cuda")
    tqdm.write(plan.text())
    trainable = prepare_trainable(model, tuning, ids, upcast=True)
    base = trainable.model.get_base_model()
    base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    base.train()
    params = [p for p in trainable.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-5, weight_decay=0.0)
    x = torch.as_tensor(rng.integers(4, vocab - 8, (args.plan_batch, args.train_tokens)), device=device)
    labels = torch.full_like(x, -100)
    labels[:, -min(128, args.train_tokens - 1):] = x[:, -min(128, args.train_tokens - 1):]  # the plan's labelled positions
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    seconds = []
    for _ in range(2):  # the first allocates Adam's states
        t = time.perf_counter()
        train_step(trainable.model, opt, x, torch.ones_like(x), labels, device)
        _sync(device)
        seconds.append(round(time.perf_counter() - t, 2))
    dtypes = {str(p.dtype) for p in trainable.model.parameters() if not p.requires_grad}
    out = {"model": args.large, "batch": args.plan_batch, "tokens_per_example": args.train_tokens, "checkpointing": True,
           "plan": {k: round(getattr(plan, k) / 2**30, 2) for k in ("weights", "gradients", "optimizer", "activations", "total")},
           "plan_bytes": plan.total, "plan_text": plan.text(), "peak_gib": peak_gib(), "step_seconds": seconds,
           "frozen_dtypes": sorted(dtypes), "trainable_dtypes": sorted({str(p.dtype) for p in params})}
    out["peak_over_plan"] = round(out["peak_gib"] / out["plan"]["total"], 3) if device == "cuda" else None
    del model, trainable, opt, base
    return out


class SplitTimer:
    """Seconds spent in the Retriever's prefill, in its constrained search, and in the LM head
    (inside both), each bracketed by a device synchronisation."""

    def __init__(self, device: str):
        self.device, self.t = device, {"prefill": 0.0, "decode": 0.0, "head": 0.0}

    def wrap(self, name: str, fn):
        def timed(*a, **k):
            _sync(self.device)
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                _sync(self.device)
                self.t[name] += time.perf_counter() - start
        return timed

    def hook_head(self, head):
        state = {}

        def pre(module, args):
            _sync(self.device)
            state["t"] = time.perf_counter()

        def post(module, args, output):
            _sync(self.device)
            self.t["head"] += time.perf_counter() - state["t"]

        return [head.register_forward_pre_hook(pre), head.register_forward_hook(post)]


def search_once(model, tok, index, queries, args, precision: str, device: str) -> tuple[dict, list]:
    """Constrained search of ``queries`` at one head precision: ms/query split, and the rankings."""
    import toolsense.decoding.retrieval as retrieval
    from toolsense.catalog import Query
    from toolsense.data.prompts import PromptConfig
    from toolsense.index import build_trie

    search = DecodingConfig(beam_width=args.beam, batch_size=args.search_batch, free_form=False,
                            head_precision=precision)
    r = retrieval.Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), search)
    timer = SplitTimer(device)
    hooks = timer.hook_head(model.get_output_embeddings())
    original = retrieval.prefill_shared
    retrieval.prefill_shared = timer.wrap("prefill", original)
    r.constrained = timer.wrap("decode", r.constrained)
    qs = [Query(str(i), q, ("x",)) for i, q in enumerate(queries)]
    try:
        _sync(device)
        t = time.perf_counter()
        ranked = sorted(r.run(qs), key=lambda a: int(a.query.query_id))
        _sync(device)
        total = time.perf_counter() - t
    finally:
        retrieval.prefill_shared = original
        for h in hooks:
            h.remove()
    ms = {"total": total, **timer.t}
    return {k: round(1000 * v / len(qs), 2) for k, v in ms.items()}, ranked


def check_search_8b(args, device) -> dict:
    """Flat and hierarchical constrained search at each head precision (module doc)."""
    import numpy as np

    from toolsense.decoding.retrieval import rankings_agree
    from toolsense.index import add_index_tokens, build_index

    out: dict = {"model": args.large, "beam": args.beam, "batch": args.search_batch, "near_tie": args.near_tie}
    for kind in ("flat", "structural"):
        rng, vocab = np.random.default_rng(0), SHAPES[args.large][5]
        tok = word_tokenizer(vocab)
        catalog, _ = catalog_and_index(args.tools, rng, vocab)
        index = build_index(catalog, kind)
        queries = [words(rng, int(rng.integers(40, 90)), vocab) for _ in range(args.search_queries)]
        model = build_model(args.large, tok, torch.bfloat16 if device == "cuda" else torch.float32, device).eval()
        add_index_tokens(index, model, tok)
        res, ref = {"depth": index.depth(), "tools": len(index.paths), "queries": len(queries)}, None
        search_once(model, tok, index, queries[: args.search_batch], args, "fp32", device)  # warm-up: kernels, cuBLAS handles
        for precision in ("fp32", "tf32", "bf16"):
            ms, ranked = search_once(model, tok, index, queries, args, precision, device)
            ref = ranked if ref is None else ref
            res[precision] = {"ms_per_query": ms,
                              "exactly_as_fp32": sum(a.constrained == b.constrained for a, b in zip(ref, ranked)) / len(ref),
                              "as_fp32_up_to_near_ties": sum(rankings_agree(a.constrained, b.constrained, args.near_tie)
                                                             for a, b in zip(ref, ranked)) / len(ref)}
            tqdm.write(json.dumps({f"search {kind} {precision}": res[precision]}))
        res["peak_gib"] = peak_gib()
        out[kind] = res
        del model
        if device == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    return out


def check_rankings_tiny(args, device) -> dict:
    """The tiny fp32 model's rankings (constrained and free-form, beam ``--beam``) on ``device``
    against the same weights on the CPU."""
    import copy

    import numpy as np

    from toolsense.catalog import Query
    from toolsense.data.prompts import PromptConfig
    from toolsense.decoding.retrieval import Retriever, rankings_agree
    from toolsense.index import add_index_tokens, build_trie

    rng, vocab = np.random.default_rng(0), SHAPES["tiny"][5]
    tok = word_tokenizer(vocab)
    _, index = catalog_and_index(300, rng, vocab)
    torch.manual_seed(0)
    cpu_model = build_model("tiny", tok, torch.float32, "cpu").eval()
    add_index_tokens(index, cpu_model, tok)
    qs = [Query(str(i), words(rng, int(rng.integers(10, 40)), vocab), ("x",)) for i in range(24)]
    runs = {}
    for where, model in (("cpu", cpu_model), (device, copy.deepcopy(cpu_model).to(device))):
        dec = DecodingConfig(beam_width=min(args.beam, 20), batch_size=8)
        r = Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), dec)
        runs[where if where not in runs else where + "2"] = sorted(r.run(qs), key=lambda a: int(a.query.query_id))
    a, b = list(runs.values())
    return {"devices": list(runs), "queries": len(qs), "near_tie": 1e-4,
            "constrained_exactly_equal": sum(x.constrained == y.constrained for x, y in zip(a, b)) / len(a),
            "constrained_equal_up_to_near_ties": sum(rankings_agree(x.constrained, y.constrained, 1e-4) for x, y in zip(a, b)) / len(a),
            "free_equal_up_to_near_ties": sum(rankings_agree(x.free, y.free, 1e-4, key="text") for x, y in zip(a, b)) / len(a)}


SLURM_ONE_TASK = {"SUBMITIT_EXECUTOR": "slurm", "SLURM_JOB_ID": "1", "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
                  "SLURM_NTASKS": "1", "SLURM_JOB_NUM_NODES": "1", "SLURM_NODEID": "0", "SLURM_JOB_NODELIST": "127.0.0.1"}
"""A Slurm job of one task on this machine, as ``launcher=slurm_gpu`` with ``tasks_per_node=1`` starts it (submitit
marks its jobs with SUBMITIT_EXECUTOR): the environment :func:`toolsense.utils.ranks.export_slurm_ranks` (the
launcher's rank setup) reads."""
RANK_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_train_ranks(args, device) -> dict:
    """train.py's training path (Stage 1 then Stage 2 of tiny_random on the test catalog, ``--rank-steps`` steps
    each, LoRA) in a process group joined as a Slurm task of ``launcher=slurm_gpu`` joins it: the job's Slurm
    variables (:data:`SLURM_ONE_TASK`) turned into the rank variables by the launcher's own rank setup
    (``export_slurm_ranks``, submitit's TorchDistributedEnvironment), then ``env://``, NCCL on a GPU (gloo on a
    CPU), at world size 1. Returns what the rank setup exported, the group's size and backend, each stage's
    training loss and steps, and whether both stages were saved."""
    import tempfile

    import torch.distributed as dist

    from toolsense.training import register_configs, to_train_config
    from toolsense.training.runner import run
    from toolsense.utils.compose import compose
    from toolsense.utils.ranks import export_slurm_ranks

    assets = ROOT / "tests" / "assets" / "training"
    steps = args.rank_steps
    overrides = ["model=tiny_random", "experiment=tg", "tuning=lora", f"catalog.path={assets / 'tools.jsonl'}", "stage2=jsonl",
                 f"stage2.sources.0.path={assets / 'queries.jsonl'}", "stage2.sources.0.split=null", "index.branching=3",
                 "memorization.mcts_negatives=3", "trainer.effective_batch=4", "trainer.per_device_batch=4",
                 "trainer.logging_steps=1", "trainer.save_steps=1000", f"stage1.max_steps={steps}", f"stage2.max_steps={steps}"]
    saved = {k: os.environ.get(k) for k in [*SLURM_ONE_TASK, *RANK_KEYS]}
    os.environ.update(SLURM_ONE_TASK, MASTER_PORT=str(free_port()))
    exported = export_slurm_ranks()
    backend = "nccl" if device == "cuda" else "gloo"
    if device == "cuda":
        torch.cuda.set_device(int(exported["LOCAL_RANK"]))
    dist.init_process_group(backend, init_method="env://")
    try:
        world, got_backend = dist.get_world_size(), dist.get_backend()
        with tempfile.TemporaryDirectory() as out:
            register_configs()
            cfg = to_train_config(compose("train", [*overrides, f"output_dir={out}"]))
            summary = run(cfg)
            stages = {st: {k: summary[st].get(k) for k in ("train_loss", "global_step")} for st in ("stage1", "stage2")}
            finished = all((Path(out) / st / "config.json").is_file() for st in stages)
            return {"exported": {k: exported[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR")}, "world_size": world,
                    "backend": got_backend, "device": device, "stages": stages, "finished": finished}
    finally:
        dist.destroy_process_group()
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


PARTS = ("train-8b", "search-8b", "rankings-tiny", "train-ranks", "train-0.5b", "decode-0.5b", "decode-8b")
DEFAULT_PARTS = ["train-8b", "search-8b", "rankings-tiny", "train-ranks"]


def parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny shapes and sizes (a CPU check that the script runs)")
    ap.add_argument("--parts", nargs="+", choices=PARTS, default=DEFAULT_PARTS)
    ap.add_argument("--tools", type=int, default=46_984)
    ap.add_argument("--queries", type=int, default=474, help="decode-* parts: queries (G1's pooled size)")
    ap.add_argument("--search-queries", type=int, default=128, help="search-8b: queries per index and precision")
    ap.add_argument("--search-batch", type=int, default=32)
    ap.add_argument("--near-tie", type=float, default=0.02, help="score tolerance of rankings_agree on the 8B shape (bf16)")
    ap.add_argument("--beam", type=int, default=50)
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=5)
    ap.add_argument("--train-batch", type=int, default=16)
    ap.add_argument("--train-tokens", type=int, default=1024, help="train-8b: tokens per example")
    ap.add_argument("--plan-batch", type=int, default=8, help="train-8b: examples per step (trainer=gpu's per_device_batch)")
    ap.add_argument("--rank-steps", type=int, default=4, help="train-ranks: steps of each stage")
    ap.add_argument("--budget-s", type=float, default=450, help="parts not started by then are recorded as skipped")
    ap.add_argument("--out", help="write the results as JSON here, after every part")
    a = ap.parse_args(argv)
    a.small, a.large = ("tiny", "tiny") if a.smoke else ("qwen2.5-0.5b", "llama3-8b")
    if a.smoke:
        a.tools, a.queries, a.beam, a.batches, a.repeats, a.train_steps, a.train_batch = 300, 12, 5, [4, 8], 2, 2, 4
        a.search_queries, a.search_batch, a.train_tokens, a.plan_batch, a.near_tie, a.rank_steps = 8, 4, 64, 2, 1e-4, 2
    return a


def run_part(part: str, args, device: str, dtype) -> dict:
    import numpy as np

    if part == "train-8b":
        return check_train_8b(args, device)
    if part == "search-8b":
        return check_search_8b(args, device)
    if part == "rankings-tiny":
        return check_rankings_tiny(args, device)
    if part == "train-ranks":
        return check_train_ranks(args, device)
    rng = np.random.default_rng(0)
    shape = args.large if part == "decode-8b" else args.small
    vocab = SHAPES[shape][5]
    tok = word_tokenizer(vocab)
    catalog, index = catalog_and_index(args.tools, rng, vocab)
    if part == "train-0.5b":
        return check_train(args, device, tok, catalog, index, rng, vocab)
    queries = [words(rng, int(rng.integers(40, 90)), vocab) for _ in range(args.queries)]  # G1 queries' length
    return check_decode(shape, args, device, tok, index, queries, dtype)


def preflight() -> None:
    """Load what every part imports now, so a package missing on the machine stops the run at once
    with its name (exit 2), not minutes in."""
    try:
        import peft  # noqa: F401

        import toolsense.decoding.retrieval  # noqa: F401
        import toolsense.training.memory  # noqa: F401
        import toolsense.training.tuning  # noqa: F401
    except ImportError as e:
        print(f"gpu_check: {e}; add it to the wheelhouse (python benchmarks/gpu_wheels.py --extra NAME==VERSION), carry "
              "gpu-wheels/ and rerun benchmarks/gpu_check.sh", file=sys.stderr)
        sys.exit(2)


def main(argv=None) -> int:
    """Every part of ``--parts`` in turn, each result (or error) written to ``--out`` when it ends;
    returns 1 when a part failed."""
    args = parse(argv)
    preflight()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    res: dict = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
                 "date": time.strftime("%Y-%m-%d %H:%M:%S"), "args": {k: v for k, v in vars(args).items() if k != "out"}}
    t0, failed = time.perf_counter(), False
    for part in tqdm(args.parts, desc="gpu_check", unit="part"):
        if time.perf_counter() - t0 > args.budget_s:
            res[part] = {"skipped": f"the {args.budget_s:.0f} s budget had passed"}
        else:
            start = time.perf_counter()
            try:
                res[part] = run_part(part, args, device, dtype)
            except Exception as e:  # one part's failure must not lose the others' numbers
                failed = True
                res[part] = {"error": f"{type(e).__name__}: {e}"}
                import traceback

                traceback.print_exc()
            res[part]["seconds"] = round(time.perf_counter() - start, 1)
            if device == "cuda":
                torch.cuda.empty_cache()
        tqdm.write(json.dumps({part: res[part]}, default=str))
        res["wall_s"] = round(time.perf_counter() - t0, 1)
        if args.out:  # after every part: a run cut short by its time limit keeps what it measured
            tmp = Path(args.out + ".tmp")
            tmp.write_text(json.dumps(res, indent=1, default=str))
            tmp.replace(args.out)
    print(json.dumps(res, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
