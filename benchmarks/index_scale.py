"""Scale check: all 46,985 ToolBench virtual tokens added to SmolLM2 and their trie built.

    python benchmarks/index_scale.py [--builder flat|structural|clustered] [--tokens PATH] [--first N]
    python benchmarks/index_scale.py --smoke     # tiny_random, the first 2,000 tokens: seconds

Prints wall time and peak RSS for each phase (load, index, add tokens + resize + init, trie),
side by side for the chosen builder. ``<<Finish>>`` (ToolGen's control token, not a tool) is
added as a plain token so the vocabulary grows by exactly the file's 46,985 tokens for flat.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from timing import parse_args  # benchmarks/timing.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("TOOLSENSE_DATA", ROOT.parent / "shared" / "data"))
SMOKE = {"model": "tiny_random", "first": 2000}
"""``--smoke``: every phase on the tiny random model and the file's first 2,000 tools."""


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", default=str(DATA / "toolbench_virtual_tokens.txt"))
    ap.add_argument("--builder", default="flat", choices=["flat", "structural", "clustered"])
    ap.add_argument("--model", default="smollm2_135m")
    ap.add_argument("--first", type=int, default=0, help="use only the file's first N tools (0 = all)")
    args = parse_args(ap, SMOKE)

    from toolsense.catalog import load_virtual_tokens
    from toolsense.index import add_index_tokens, build_index, build_trie
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    rows = []

    def phase(name, fn):
        t = time.perf_counter()
        out = fn()
        rows.append((name, time.perf_counter() - t, peak_rss_mib()))
        return out

    model, tok = phase("load model", lambda: load_model_and_tokenizer(ModelConfig(args.model)))
    n0 = len(tok)
    catalog = phase("load token list", lambda: load_virtual_tokens(args.tokens))
    if args.first:
        catalog = catalog.subset(catalog.names[: args.first])
    index = phase(f"build {args.builder} index", lambda: build_index(catalog, args.builder))
    phase("add tokens + resize + init", lambda: add_index_tokens(index, model, tok))
    if args.builder == "flat":
        tok.add_tokens(["<<Finish>>"])
        model.resize_token_embeddings(len(tok), mean_resizing=False)
    trie = phase("build trie", lambda: build_trie(index, tok))
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight

    print(f"\nmodel={args.model} builder={args.builder} tools={len(catalog)} new tokens={len(tok) - n0} "
          f"vocab {n0} -> {len(tok)} tied={tied} trie nodes={trie.num_nodes}")
    print(f"{'phase':32s} {'seconds':>9s} {'peak RSS MiB':>13s}")
    for name, sec, rss in rows:
        print(f"{name:32s} {sec:9.2f} {rss:13.0f}")


if __name__ == "__main__":
    main()
