"""One retrieval evaluation (one benchmark × one system): samples.jsonl written per item and
resumable, then results.json with metrics, 95% intervals, per-tier breakdowns and provenance."""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from tqdm import tqdm

from toolsense.catalog import Query
from toolsense.decoding.retrieval import Retrieved
from toolsense.evaluation.benchmarks import Benchmark
from toolsense.evaluation.config import MetricsConfig
from toolsense.evaluation.coverage import Stage2Tools, coverage_summary, is_covered, is_covered_any
from toolsense.evaluation.distributed import Shard
from toolsense.evaluation.outputs import SampleLog, publish_result
from toolsense.metrics.aggregate import aggregate, flag_trivial, item_metrics
from toolsense.reporting.export import trec_texts
from toolsense.utils.io import DataError, git_sha
from toolsense.utils.progress import heartbeat
from toolsense.utils.warnings import summarise

log = logging.getLogger(__name__)

Ranker = Callable[[Sequence[Query]], Iterator[Retrieved]]


def missing_gold(items: Sequence[Query], known: set[str], policy: str = "count") -> tuple[list[Query], dict[str, Any]]:
    """The queries to score and the report of gold tools absent from the system's index.
    ``count``: they stay in the gold sets (so they count as misses); ``drop``: they leave each
    query's gold and queries left without gold are dropped. The report names them, counts the
    queries they affect and the queries dropped, and states the policy."""
    names: dict[str, int] = defaultdict(int)
    affected, kept = 0, []
    for q in items:
        miss = [t for t in q.tools if t not in known]
        affected += bool(miss)
        for t in miss:
            names[t] += 1
        if policy == "count":
            kept.append(q)
        elif len(miss) < len(q.tools):
            kept.append(dataclasses.replace(q, tools=tuple(t for t in q.tools if t in known)) if miss else q)
    report = {"count": len(names), "queries_affected": affected, "names": sorted(names), "policy": policy,
              "queries_dropped": len(items) - len(kept)}
    return kept, report


def summarize(rows: Sequence[dict], tiers: Sequence[str], cfg: MetricsConfig, with_free: bool) -> dict[str, Any]:
    metrics = aggregate([r["metrics"] for r in rows], cfg.ks, cfg.resamples, cfg.seed, with_free, cfg.min_hits)
    by_tier: dict[str, list[dict]] = defaultdict(list)
    for r, t in zip(rows, tiers):
        by_tier[t].append(r["metrics"])
    tier_out = {t: {"n": len(v), "metrics": aggregate(v, cfg.ks, cfg.resamples, cfg.seed, with_free, cfg.min_hits)}
                for t, v in sorted(by_tier.items())}
    return {"metrics": metrics, "tiers": tier_out}


def _rank_into(ranker: Ranker, todo: Sequence[Query], samples: SampleLog, bar: tqdm, bench: Benchmark,
               ks: Sequence[int], original: dict[str, Any], known_tools: set[str], trained: Optional[Stage2Tools]) -> None:
    """Rank ``todo`` and append one scored sample per query as it completes."""
    for rec in ranker(todo):
        q = rec.query
        ranked_c = [x["tool"] for x in rec.constrained]
        m = item_metrics(ranked_c, q.tools, ks, "c_")
        if rec.free is not None:
            m.update(item_metrics([x["tool"] for x in rec.free], q.tools, ks, "f_"))
        samples.add({
            "item_id": q.query_id, "query": q.text, "prompt": rec.prompt, "gold": list(q.tools),
            "tier": bench.tier_of(q), "missing_gold": [t for t in original[q.query_id] if t not in known_tools],
            "covered": is_covered(q.tools, trained), "covered_any": is_covered_any(q.tools, trained),
            "constrained": rec.constrained, "free": rec.free, "metrics": m,
        })
        bar.update(1)


def evaluate_ranking(bench: Benchmark, system: str, ranker: Ranker, known_tools: set[str], metrics: MetricsConfig,
                     out_dir: str | Path, provenance: dict[str, Any], shard: Shard = Shard(),
                     trained: Optional[Stage2Tools] = None) -> dict[str, Any] | None:
    """Rank every query of ``bench`` with ``ranker``, log each item to ``out_dir/samples.jsonl``
    as it completes (skipping items already there), and write ``out_dir/results.json``; each
    item's hits are counted at ``metrics.ks``, the estimates bootstrapped by ``metrics``.
    ``trained``: the tools Stage 2 of the evaluated run trained on (coverage.py): each sample
    records ``covered`` and results.json ``coverage``; None (untrained model, baseline) = not
    applicable.
    With a ``shard`` of several processes each ranks its share (distributed.py) and rank 0
    merges and scores; the other ranks return None."""
    out_dir = Path(out_dir)
    policy = bench.config.missing if bench.config is not None else "count"
    items, missing = missing_gold(list(bench.items), known_tools, policy)
    if missing["count"]:
        summarise(log, missing["names"], f"gold tools of {bench.name} not in the {system} index "
                  f"({missing['queries_affected']} queries affected; missing={policy}, "
                  f"{missing['queries_dropped']} queries dropped)", out_dir / "missing_gold.txt")
    else:  # a list from an earlier evaluation into this folder (overwrite=true) would describe another index
        (out_dir / "missing_gold.txt").unlink(missing_ok=True)
    if not items:
        raise DataError(f"benchmark {bench.name!r}: no query has a gold tool in the {system} index (benchmark.missing=drop)")
    original = {q.query_id: q.tools for q in bench.items}
    ids = [q.query_id for q in items]
    if len(set(ids)) != len(ids):
        raise ValueError(f"benchmark {bench.name!r} repeats query ids; samples.jsonl needs unique ids")
    with SampleLog(out_dir / "samples.jsonl", rank=shard.rank if shard.world > 1 else None) as samples:
        mine = shard.take(items)
        todo = [q for q in mine if not samples.done(q.query_id)]
        desc = f"{bench.name}/{system}" + (f" [rank {shard.rank}/{shard.world}]" if shard.world > 1 else "")
        bar = tqdm(total=len(mine), initial=len(mine) - len(todo), desc=desc, unit="q")
        with heartbeat(bar):  # a batch of queries can take minutes at catalog scale: keep the log alive
            _rank_into(ranker, todo, samples, bar, bench, metrics.ks, original, known_tools, trained)
        bar.close()
        shard.barrier()  # every process has written its share
        if not shard.main:
            return None
        samples.consolidate(ids)
        rows = samples.ordered(ids)
    if len(rows) != len(ids):
        raise RuntimeError(f"{out_dir / 'samples.jsonl'}: {len(ids) - len(rows)} of {len(ids)} items have no sample")
    with_free = all(r["free"] is not None for r in rows)
    summary = summarize(rows, [r["tier"] for r in rows], metrics, with_free)
    min_gold = min(len(r["gold"]) for r in rows)
    trivial = flag_trivial(summary["metrics"], metrics.ks, len(known_tools), min_gold)
    for tier in summary["tiers"].values():
        flag_trivial(tier["metrics"], metrics.ks, len(known_tools), min_gold)
    result = {
        "benchmark": bench.name, "system": system, "kind": "retrieval", "n": len(rows), "n_tools": len(known_tools),
        "trivial": trivial, **summary,
        "coverage": coverage_summary([r["gold"] for r in rows], trained),
        "is_sample": bench.is_sample, "missing": missing, "git_sha": git_sha(),
        "hashes": {"benchmark_sha256": bench.sha256, "index_sha256": provenance.get("index_sha256")},
        "benchmark_path": bench.path, "benchmark_files": bench.files, **{k: v for k, v in provenance.items() if k != "index_sha256"},
    }
    # with run.constrained.trec (+ run.free.trec where free-form), qrels.trec for trec_eval / ranx (export.py), as one set
    publish_result(out_dir, result, trec_texts(out_dir, system))
    return result
