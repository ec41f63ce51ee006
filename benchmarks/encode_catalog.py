"""Encoding a large catalog: exact fp32 vs int8 dynamic quantisation, and the cached rerun.

    python benchmarks/encode_catalog.py [--n 4000] [--repeats 2] [--batch-size 256]
    python benchmarks/encode_catalog.py --smoke     # 32 tools, one run per backend: seconds

On a fixed slice of the 46,803-API ToolEnv2404 catalog (the G1_instruction gold tools it holds,
then the catalog's first tools, up to ``--n``), prints texts/s of each backend (runs
interleaved, ``--repeats`` each; min and median seconds), the time of a first (encode + write) and a
second (cache hit, memory-mapped) ``catalog_embeddings`` call, and recall@10 of dense retrieval
of the G1_instruction queries whose gold tools are all in the slice, for both backends. The
first timed run of the first backend goes through the cache (encode + write). The encoder is
loaded before the clock starts. Numbers on a shared machine are noisy: compare the
side-by-side columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("TOOLSENSE_DATA", ROOT.parent / "shared" / "data"))
sys.path.insert(0, str(ROOT))

from timing import parse_args  # noqa: E402  (benchmarks/timing.py, beside this script)

SMOKE = {"n": 32, "repeats": 1, "batch_size": 32}
"""``--smoke``: both backends, the cache and recall@10 on the 32 gold tools of the first G1 queries."""


def fixed_slice(catalog, queries, n: int):
    """The gold tools of ``queries`` found in the catalog, then catalog order, up to ``n`` tools."""
    names = set(catalog.names)
    keep: dict[str, None] = {g: None for q in queries for g in q.tools if g in names}
    for name in catalog.names:
        if len(keep) >= n:
            break
        keep.setdefault(name, None)
    return catalog.subset(list(keep)[:n])


def recall_at_10(tool_emb: np.ndarray, query_emb: np.ndarray, names: list[str], queries) -> float:
    from toolsense.metrics.ranking import recall_at

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    top = np.argsort(-(unit(query_emb) @ unit(np.asarray(tool_emb)).T), axis=1, kind="stable")[:, :10]
    return float(np.mean([recall_at([names[i] for i in row], q.tools, 10) for row, q in zip(top, queries)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--catalog", default=str(DATA / "catalogs/toolenv2404.jsonl.gz"))
    ap.add_argument("--queries", default=str(DATA / "toolbench_queries/G1_instruction.json"))
    ap.add_argument("--n", type=int, default=4000, help="tools in the slice")
    ap.add_argument("--repeats", type=int, default=2, help="timed runs per backend (interleaved)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--backends", nargs="+", default=["torch", "int8"])
    args = parse_args(ap, SMOKE)

    from toolsense.catalog import load_catalog, load_toolbench_queries
    from toolsense.models.encoders import SentenceEncoder, catalog_embeddings

    full = load_catalog(args.catalog, on_duplicate="first")
    all_queries = load_toolbench_queries(args.queries)
    catalog = fixed_slice(full, all_queries, args.n)
    queries = [q for q in all_queries if set(q.tools) <= set(catalog.names)]
    if not queries:
        raise SystemExit(f"no query of {args.queries} has all its gold tools among the slice's {len(catalog)} tools: raise --n")
    texts = [t.text() for t in catalog]
    encoders = {b: SentenceEncoder(None, b, args.batch_size) for b in args.backends}
    for enc in encoders.values():
        enc.model  # load before timing
    times: dict[str, list[float]] = {b: [] for b in encoders}
    last: dict[str, np.ndarray] = {}
    base = args.backends[0]
    with tempfile.TemporaryDirectory() as root:
        for rep in range(args.repeats):
            for b, enc in encoders.items():
                t = time.perf_counter()
                if rep == 0 and b == base:  # the first timed run fills the cache: encode + write
                    last[b] = np.array(catalog_embeddings(catalog, enc, normalize=False, root=root))
                else:
                    last[b] = enc.encode(texts, progress=True)
                times[b].append(time.perf_counter() - t)
                print(f"run {rep + 1} {b}: {len(texts) / times[b][-1]:.1f} texts/s", flush=True)
        t = time.perf_counter()
        again = catalog_embeddings(catalog, encoders[base], normalize=False, root=root, progress=False)
        t_again = time.perf_counter() - t
        assert np.abs(np.asarray(again) - last[base]).max() < 1e-4
    t_first = times[base][0]

    print(f"\n{len(catalog)} tools of {len(full)} ({Path(args.catalog).name}), batch {args.batch_size}, "
          f"{len(queries)} G1 queries with every gold tool in the slice")
    print(f"{'backend':8s} {'min s':>8s} {'median s':>9s} {'texts/s (min s)':>16s} {'texts/s (median s)':>19s} {'recall@10':>10s}")
    qtexts = [q.text for q in queries]
    recalls = {b: recall_at_10(last[b], enc.encode(qtexts), catalog.names, queries) for b, enc in encoders.items()}
    for b in encoders:
        lo, med = min(times[b]), statistics.median(times[b])
        print(f"{b:8s} {lo:8.1f} {med:9.1f} {len(texts) / lo:16.1f} {len(texts) / med:19.1f} {recalls[b]:10.4f}")
    for b in args.backends[1:]:
        ratio = statistics.median(times[base]) / statistics.median(times[b])
        cos = np.sum(last[base] * last[b], axis=1) / (np.linalg.norm(last[base], axis=1) * np.linalg.norm(last[b], axis=1))
        print(f"{b} vs {base}: {ratio:.2f}x the speed (medians), recall@10 {recalls[b] - recalls[base]:+.4f}, "
              f"cosine to {base} mean {cos.mean():.4f} min {cos.min():.4f}")
    print(f"cache ({base}): first call (encode + write, run 1) {t_first:.1f} s, second call (memory-mapped load) {t_again:.3f} s "
          f"= {t_first / max(t_again, 1e-9):.0f}x faster")


if __name__ == "__main__":
    main()
