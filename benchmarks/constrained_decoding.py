"""Constrained decoding speed: our batched evaluator vs ToolGen's way vs the forward-only floor.

    python benchmarks/constrained_decoding.py                       # flat tokens, SmolLM2, B=50
    python benchmarks/constrained_decoding.py --index structural    # hierarchical tokens
    python benchmarks/constrained_decoding.py --queries 8 --ref-queries 4 --tokens 5000   # quick CPU check
    python benchmarks/constrained_decoding.py --smoke                # tiny_random, 300 tools: seconds

Measured side by side in one run, on the same model, prompts and beam width:
- floor: one batched prefill of the prompts (forward only, no decoding);
- ours: toolsense's constrained search (flat: prefill + one decode step of the B candidates;
  hierarchical: batched beam search with trie masks as tensors and a KV cache);
- reference: one query at a time, HF ``generate(num_beams=B)`` with a LogitsProcessor that walks
  a dict trie for every beam at every step (how the original ToolGen evaluation works).
Prints ours/floor (target <= 1.5x for flat), reference/ours (target >= 10x for hierarchical),
and whether the top-B tool lists are identical (target: all). Flat: the peak memory of the
constrained search after one batch's prefill, with the EOS read through the head a slice of the
vocabulary at a time (``--vocab-slice`` rows, ``decoding.head.VOCAB_SLICE``) beside the
whole-vocabulary forward it replaced, in the same run (CUDA: the allocator's peak; CPU: the tensors
alive at once, ``timing.peak_bytes``), and whether their rankings agree. Each side runs ``--repeats`` times,
interleaved with the others (benchmarks/timing.py): min, median and spread per side; ratios on
the minima, medians beside them.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from timing import interleaved, line, parse_args, peak_bytes, ratio  # noqa: E402  (benchmarks/timing.py, beside this script)

from toolsense.catalog import load_catalog, load_toolbench_queries  # noqa: E402
from toolsense.data.prompts import PromptConfig  # noqa: E402
from toolsense.decoding import beam  # noqa: E402
from toolsense.decoding import head as lm_head
from toolsense.decoding.beam import common_prefix_length, left_pad, prefill, prefill_shared  # noqa: E402
from toolsense.decoding.config import DecodingConfig  # noqa: E402
from toolsense.decoding.head import fp32_head  # noqa: E402
from toolsense.decoding.retrieval import Retriever, encode, length_batches  # noqa: E402
from toolsense.index import add_index_tokens, build_index, build_trie  # noqa: E402
from toolsense.models import ModelConfig, load_model_and_tokenizer  # noqa: E402

SMOKE = {"model": "tiny_random", "tokens": 300, "queries": 8, "ref_queries": 4, "beam": 8, "batch": 4, "repeats": 2,
         "vocab_slice": 256}
"""``--smoke``: every side, the identical-lists check included, on the tiny random model."""
DATA = os.environ.get("TOOLSENSE_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))


def dict_trie(index, tokenizer) -> dict:
    """ToolGen-style nested dict trie: token id -> subtrie; the EOS leaf maps to the tool name."""
    root: dict = {}
    vocab = tokenizer.get_vocab()
    for name, path in index.paths.items():
        node = root
        for tok in path:
            node = node.setdefault(vocab[tok], {})
        node[tokenizer.eos_token_id] = name
    return root


def reference_search(model, tokenizer, prompt_ids: list[int], trie: dict, beams: int, steps: int) -> list[str | None]:
    """One query: HF beam search, a Python trie walk per beam per step in a LogitsProcessor."""
    from transformers import LogitsProcessor, LogitsProcessorList

    plen = len(prompt_ids)

    class TrieProcessor(LogitsProcessor):
        def __call__(self, input_ids, scores):
            mask = torch.full_like(scores, float("-inf"))
            for row, seq in enumerate(input_ids[:, plen:].tolist()):
                node = trie
                for t in seq:
                    node = node.get(t, {}) if isinstance(node, dict) else {}
                allowed = list(node.keys()) if isinstance(node, dict) else []
                mask[row, allowed] = 0.0
            return scores + mask

    device = next(model.parameters()).device
    inp = torch.tensor([prompt_ids], device=device)
    out = model.generate(inp, attention_mask=torch.ones_like(inp), num_beams=beams, num_return_sequences=beams,
                         max_new_tokens=steps, do_sample=False, logits_processor=LogitsProcessorList([TrieProcessor()]),
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    tools = []
    for seq in out[:, plen:].tolist():
        node = trie
        for t in seq:
            node = node.get(t) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                break
        tools.append(node if isinstance(node, str) else None)
    return tools


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2_135m")
    ap.add_argument("--index", default="flat", choices=["flat", "structural"])
    ap.add_argument("--tokens", type=int, default=0, help="use only the first N ToolBench tokens (0 = all 46,985)")
    ap.add_argument("--queries", type=int, default=64, help="queries timed for floor and ours")
    ap.add_argument("--ref-queries", type=int, default=16, help="queries timed for the reference (it is slow)")
    ap.add_argument("--beam", type=int, default=50)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each side, interleaved")
    ap.add_argument("--vocab-slice", type=int, default=lm_head.VOCAB_SLICE, help="head rows per step of the EOS read")
    args = parse_args(ap, SMOKE)
    lm_head.VOCAB_SLICE = args.vocab_slice

    catalog = load_catalog(os.path.join(DATA, "toolbench_virtual_tokens.txt"))
    if args.tokens:
        catalog = catalog.subset(catalog.names[: args.tokens])
    index = build_index(catalog, args.index)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, tok = load_model_and_tokenizer(ModelConfig(args.model, dtype=args.dtype), device=device)
    t0 = time.time()
    add_index_tokens(index, model, tok)
    model.eval()
    print(f"{len(index.paths)} tools, {len(index.tokens())} new tokens ({args.index}) added in {time.time() - t0:.1f}s; device={device}")
    queries = load_toolbench_queries(os.path.join(DATA, "toolbench_queries", "G1_instruction.json"))[: args.queries]
    dec = DecodingConfig(beam_width=args.beam, batch_size=args.batch, free_form=False)
    retriever = Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), dec)
    ids = encode(tok, [retriever.prompt(q) for q in queries])
    batches = length_batches([len(s) for s in ids], args.batch)

    def floor() -> None:
        for b in batches:
            prefill(model, *left_pad([ids[i] for i in b], tok.pad_token_id, device))

    def floor_shared() -> None:
        for b in batches:
            prefill_shared(model, [ids[i] for i in b], tok.pad_token_id, device)

    ours, our_scores = {}, {}

    def run_ours() -> None:
        for rec in retriever.run(queries):
            ours[rec.query.query_id] = [x["tool"] for x in rec.constrained]
            our_scores[rec.query.query_id] = {x["tool"]: x["score"] for x in rec.constrained}

    trie = dict_trie(index, tok)
    ref_q = queries[: args.ref_queries]
    ref: dict = {}

    def run_ref() -> None:
        ref.update({q.query_id: reference_search(model, tok, ids[i], trie, args.beam, index.depth() + 1) for i, q in enumerate(ref_q)})

    sides = {"floor": floor, "floor_shared": floor_shared, "ours": run_ours}
    if args.ref_queries:
        sides["reference"] = run_ref
    times = interleaved(sides, args.repeats, desc="constrained decoding")
    scale = len(queries) / len(ref_q) if ref_q else 1.0
    times["reference"] = [t * scale for t in times.get("reference", [])]

    # FLOPs on hardware whose cost is linear in them (CPU): the floor's padded prompt tokens
    # through the body; ours = each batch's shared prefix once + the rest per prompt, then the B
    # candidates' decode step (body + a full-vocabulary head each) that any exact method needs.
    emb = {id(p) for p in (model.get_input_embeddings().weight, model.get_output_embeddings().weight)}
    body = 2 * sum(p.numel() for p in model.parameters() if id(p) not in emb)
    head = 2 * model.get_output_embeddings().weight.numel()
    shared = [common_prefix_length([ids[i] for i in b]) for b in batches]
    prefill_tokens = sum(len(b) * max(len(ids[i]) for i in b) for b in batches)
    ours_tokens = sum(p + len(b) * (max(len(ids[i]) for i in b) - p) for p, b in zip(shared, batches))
    flops_ratio = (ours_tokens * body + len(queries) * args.beam * (body + head)) / (prefill_tokens * body)
    bound = 1 + len(queries) * args.beam * (body + head) / (prefill_tokens * body)

    print(f"queries={len(queries)} beam={args.beam} index={args.index} tools={len(index.paths)}")
    print(line("floor (one batched prefill)", times["floor"]))
    print(line(f"floor, common prefix once ({min(shared)}-{max(shared)} tok)", times["floor_shared"]))
    print(line("ours (batched, tensor masks)", times["ours"]))
    print(f"ours/floor = {ratio(times['ours'], times['floor'])} (target <= 1.5x for flat); "
          f"against the shared-prefix prefill {ratio(times['ours'], times['floor_shared'])}")
    if index.depth() == 1:
        print(f"  FLOPs over the floor's: {bound:.2f}x for an exact method that prefills like the floor "
              f"(+ {args.beam} candidates x (body + {head // 2 // 10**6}M-weight head) over {prefill_tokens} padded prompt tokens); "
              f"{flops_ratio:.2f}x for ours (shared prefixes)")
    if times["reference"]:
        print(line(f"reference ({len(ref_q)} timed, scaled)", times["reference"]))
        print(f"reference/ours = {ratio(times['reference'], times['ours'])} (target >= 10x for hierarchical)")
    if index.depth() == 1:
        eos_read_memory(retriever, [ids[i] for i in batches[0]], tok.pad_token_id)
    if not ref:
        return
    same = sum(ours[k] == v for k, v in ref.items())
    same10 = sum(ours[k][:10] == v[:10] for k, v in ref.items())
    # A list that differs only where two tools' scores lie within float rounding (1e-4) of each
    # other: same set, and the reference's order never contradicts our scores by more than that.
    ties = sum(ours[k] != v and set(ours[k]) == set(v)
               and all(our_scores[k][a] >= our_scores[k][b] - 1e-4 for a, b in zip(v, v[1:])) for k, v in ref.items())
    print(f"identical top-{args.beam} lists: {same}/{len(ref)}; identical top-10: {same10}/{len(ref)}; "
          f"the others differ only by near-ties (scores within 1e-4): {ties}/{len(ref) - same}")


def eos_read_memory(retriever: Retriever, ids: list[list[int]], pad: int) -> None:
    """Peak memory of the flat constrained search of one batch, its prefill done: the EOS read in vocabulary
    slices (ours) beside the whole-vocabulary forward (``beam._plain_decoder`` off: the path before), each
    measured twice, interleaved."""
    model, dec, whole_path = retriever.model, retriever.dec, beam._plain_decoder
    runs, peaks = {}, {"whole vocabulary": [], "vocabulary slices": []}
    with fp32_head(model, retriever.n_tokens, dec.head_precision):
        pre = prefill_shared(model, ids, pad, retriever.device)
        for _ in range(2):
            for side in peaks:
                beam._plain_decoder = (lambda model: None) if side == "whole vocabulary" else whole_path
                try:
                    search = lambda: runs.__setitem__(side, beam.flat_constrained(model, pre, retriever.tt, dec.beam_width))  # noqa: E731
                    peaks[side].append(peak_bytes(search))
                finally:
                    beam._plain_decoder = whole_path
    mib = {side: min(v) / 2**20 for side, v in peaks.items()}
    agree = sum(a == b for a, b in zip(runs["whole vocabulary"].tools, runs["vocabulary slices"].tools))
    print(f"peak memory of the constrained search of {len(ids)} queries x {dec.beam_width} beams after their prefill "
          f"(vocabulary {retriever.n_tokens}, slices of {lm_head.VOCAB_SLICE}): whole vocabulary {mib['whole vocabulary']:.2f} MiB, "
          f"vocabulary slices {mib['vocabulary slices']:.2f} MiB, ratio {mib['whole vocabulary'] / mib['vocabulary slices']:.2f}x; "
          f"identical rankings {agree}/{len(ids)}")


if __name__ == "__main__":
    main()
