"""The second baseline evaluation over the paper's catalog reuses the first one's tool embeddings.

    python benchmarks/eval_rerun.py [--benchmark rrb_sample | --rrb <released rrb.jsonl>] [--warm-repeats 2]
    python benchmarks/eval_rerun.py --smoke     # the demo catalog (126 tools), one warm run: about a minute

Runs ``evaluate.py catalog=toolbench parametric=false`` with the BM25 and dense (MiniLM) baselines
on the Realistic Retrieval Benchmark, as a user would (one process per evaluation, a fresh output
directory each time): first with an empty embedding cache (every one of the 46,984 tool texts is
encoded), then ``--warm-repeats`` times with the cache the first run wrote. Prints the wall time of
each run, min and median of the warm runs, and warm/cold (goal < 0.10). The built catalog
(``catalogs/toolbench.jsonl``) and converted models are taken from the real cache, so the cold run
times evaluation, not the one-off catalog build. The released RRB is not in ../shared/data (only its
24-query sample): ``--rrb`` takes the released file when you have it; the cost measured is the
catalog's, which does not depend on how many queries the benchmark holds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import parse_args  # noqa: E402  (benchmarks/timing.py, beside this script)

SMOKE = {"catalog": "demo", "benchmark": "demo_realistic", "warm_repeats": 1}
"""``--smoke``: the same three-process comparison on the demo catalog, whose cold run encodes 126 tools."""


def evaluate(overrides: list[str], cache: Path, out: Path) -> float:
    """Wall seconds of one ``evaluate.py`` process with ``TOOLSENSE_CACHE=cache``."""
    env = {**os.environ, "TOOLSENSE_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, str(ROOT / "evaluate.py"), *overrides, f"output_dir={out}"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"evaluate.py failed ({proc.returncode}): {' '.join(cmd)}")
    return time.perf_counter() - t0


def scratch_cache(tmp: Path) -> Path:
    """A cache root with the real cache's built catalogs and converted models and NO embeddings."""
    from toolsense.utils.paths import cache_root

    real, cache = cache_root(), tmp / "cache"
    cache.mkdir()
    for sub in ("catalogs", "models"):
        if (real / sub).exists():
            (cache / sub).symlink_to(real / sub)
    return cache


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmark", default="rrb_sample", help="conf/benchmark option (rrb_sample, or rrb with --rrb)")
    ap.add_argument("--rrb", default=None, help="the released RRB file (benchmark=rrb benchmark.path=...)")
    ap.add_argument("--catalog", default="toolbench")
    ap.add_argument("--warm-repeats", type=int, default=2)
    args = parse_args(ap, SMOKE)
    bench = ["benchmark=rrb", f"benchmark.path={args.rrb}"] if args.rrb else [f"benchmark={args.benchmark}"]
    overrides = [f"catalog={args.catalog}", *bench, "parametric=false",
                 "+baseline@baselines.bm25=bm25", "+baseline@baselines.dense=dense"]
    print("evaluate.py " + " ".join(overrides), flush=True)
    with tempfile.TemporaryDirectory(prefix="eval_rerun_") as tmp:
        cache = scratch_cache(Path(tmp))
        cold = evaluate(overrides, cache, Path(tmp) / "cold")
        print(f"cold (empty embedding cache): {cold:.1f} s", flush=True)
        warm = [evaluate(overrides, cache, Path(tmp) / f"warm{i}") for i in range(args.warm_repeats)]
    print(f"warm (cached embeddings), {len(warm)} runs: min {min(warm):.1f} s, median {statistics.median(warm):.1f} s")
    ratio = statistics.median(warm) / cold
    print(f"warm/cold = {ratio:.4f} (goal < 0.10: {'met' if ratio < 0.10 else 'NOT met'})")


if __name__ == "__main__":
    main()
