"""Generation's pool search at catalog scale, next to the encoding it stands on.

Builds the candidate pools P(τ) (anchor + its K nearest tools by cosine) for ``--anchors``
anchors over the whole ToolEnv2404 catalog (46,803 records) with the chunked top-k that
``generate.py`` uses, and prints that time next to the time it takes to encode the catalog's
API texts with the embedded MiniLM. Goal: pool search ≤ 10% of encoding.

Encoding all 46k texts takes a long time on CPU, so by default the encoder runs on ``--encode``
texts (interleaved runs, min and median) and the full-catalog encoding time is extrapolated
from that rate — the script says so. The pool search always runs on a full-size matrix: the
cached catalog embeddings when they exist, else the encoded slice tiled to the catalog's size
(the search costs the same for any values). Run:

    python benchmarks/pool_search.py [--anchors 500] [--encode 512] [--repeats 2]
    python benchmarks/pool_search.py --smoke     # 50 anchors, 16 texts encoded: seconds
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
from timing import parse_args  # benchmarks/timing.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
SMOKE = {"anchors": 50, "encode": 16, "repeats": 1}
"""``--smoke``: the whole catalog still (its size is the point), few anchors and encoded texts."""
CATALOG = Path(os.environ.get("TOOLSENSE_DATA", ROOT.parent / "shared" / "data")) / "catalogs" / "toolenv2404.jsonl.gz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--anchors", type=int, default=500)
    ap.add_argument("--k", type=int, default=13, help="pool = anchor + its k nearest tools (the paper: 13)")
    ap.add_argument("--encode", type=int, default=512, help="texts encoded per timed run")
    ap.add_argument("--repeats", type=int, default=2)
    args = parse_args(ap, SMOKE)

    from toolsense.catalog import load_catalog
    from toolsense.generation.topk import top_k_cosine
    from toolsense.models.encoders.cache import api_text
    from toolsense.models.encoders.loading import load_encoder

    catalog = load_catalog(CATALOG, on_duplicate="first")
    texts = [api_text(t) for t in catalog]
    n = len(texts)
    encoder = load_encoder(None)
    rng = np.random.default_rng(0)
    anchors = rng.choice(n, size=min(args.anchors, n), replace=False)
    sample = [texts[i] for i in rng.choice(n, size=min(args.encode, n), replace=False)]
    encoder.encode(sample[:32], normalize_embeddings=True)  # warm-up

    enc_s, pool_s, emb = [], [], None
    for _ in range(args.repeats):  # interleaved: both sides see the same machine load
        t0 = time.perf_counter()
        emb = np.asarray(encoder.encode(sample, batch_size=64, normalize_embeddings=True), dtype=np.float32)
        enc_s.append(time.perf_counter() - t0)
        keys = np.resize(emb, (n, emb.shape[1]))  # full-size matrix (values do not change the cost)
        t0 = time.perf_counter()
        top_k_cosine(keys[anchors], keys, args.k + 1)
        pool_s.append(time.perf_counter() - t0)

    rate = len(sample) / min(enc_s)
    full_enc = n / rate
    print(f"catalog: {n} tools; anchors: {len(anchors)}; pool = anchor + {args.k} nearest")
    print(f"encoding {len(sample)} texts: min {min(enc_s):.1f} s, median {statistics.median(enc_s):.1f} s "
          f"({rate:.1f} texts/s at best)")
    print(f"encoding the whole catalog (extrapolated from that rate): {full_enc:.0f} s")
    print(f"pool search over the whole catalog: min {min(pool_s):.2f} s, median {statistics.median(pool_s):.2f} s")
    print(f"pool search / encoding = {min(pool_s) / full_enc:.3g} (goal <= 0.10)")


if __name__ == "__main__":
    main()
