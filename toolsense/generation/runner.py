"""Generation run: plan tasks, make items (one by one, or ``concurrency`` at a time for API
LLMs; tqdm either way), append each accepted item to its
benchmark file and each rejection to ``rejected.jsonl`` as it happens, so an interrupted run
resumes where it stopped; ``summary.json`` counts what was accepted and why items were rejected."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, Sequence, TypeVar

import numpy as np
from tqdm import tqdm

from toolsense.catalog import Catalog, Tool
from toolsense.catalog.config import load_from_config
from toolsense.generation.config import GenerateConfig
from toolsense.generation.llm import CachedLLM, ChatLLM, build_llm
from toolsense.generation.pools import Neighbourhoods
from toolsense.generation.probes import make_mcq_item, make_qa_item
from toolsense.generation.rrb import make_rrb_item, plan_rrb

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
NAMESPACE = uuid.UUID("5f0c1c52-8b3e-4d7e-9a53-0f6c2b1d7a11")


def tool_record(t: Tool) -> dict:
    """A tool in the released ToolSense file format."""
    return {"tool_name": t.raw_name or t.name, "tool_title": t.tool_title, "tool_description": t.tool_description,
            "api_title": t.api_title, "api_description": t.api_description}


def _done_ids(out: Path) -> set[str]:
    done = set()
    for f in out.glob("*.jsonl"):
        if f.name == "llm_cache.jsonl":
            continue
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                gen = row.get("generation", row)
                if f.name != "rejected.jsonl" or row.get("final"):
                    done.add(gen["task_id"])
    return done


class _Writer:
    """Appends whole JSON lines; a lock keeps lines whole when worker threads write rejections."""

    def __init__(self, out: Path):
        self.out = out
        self.lock = threading.Lock()

    def append(self, name: str, row: dict) -> None:
        with self.lock, open(self.out / name, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def ordered_map(fn: Callable[[T], R], items: Sequence[T], workers: int) -> Iterator[R]:
    """``fn`` over ``items``, results in order: lazily one by one (``workers`` = 1, so each
    result is seen before the next item starts) or ``workers`` threads at a time."""
    if workers == 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, items)


def run(cfg: GenerateConfig, writer: ChatLLM | None = None, judge: ChatLLM | None = None,
        catalog: Catalog | None = None, embeddings: np.ndarray | None = None) -> dict:
    """Generate the configured benchmarks into ``cfg.output_dir``; returns the summary.
    ``writer``/``judge``/``catalog``/``embeddings`` may be passed in (tests, notebooks)."""
    out = Path(cfg.output_dir)
    if out.exists() and any(out.glob("*.jsonl")) and cfg.on_exists == "error":
        raise FileExistsError(f"{out} already holds generated files (on_exists=error)")
    out.mkdir(parents=True, exist_ok=True)
    catalog = catalog or load_from_config(cfg.catalog)
    nb = Neighbourhoods(catalog, cfg.encoder, embeddings)
    writer = writer or CachedLLM(build_llm(cfg.writer), out / "llm_cache.jsonl")
    if cfg.judge_enabled:
        judge = judge or (CachedLLM(build_llm(cfg.judge), out / "llm_cache.jsonl") if cfg.judge else writer)
    else:
        judge = None
    done = _done_ids(out)
    w = _Writer(out)
    stats: Counter = Counter()
    reasons: Counter = Counter()
    temp = cfg.writer.temperature

    def reject(task_id: str, attempt: int, reason: str, trace, final: bool) -> None:
        with w.lock:
            reasons[reason] += 1
        w.append("rejected.jsonl", {"task_id": task_id, "attempt": attempt, "reason": reason, "trace": trace, "final": final})

    def attempt_loop(task_id: str, make) -> tuple[dict | None, int]:
        for attempt in range(cfg.max_attempts):
            item, reason, trace = make(attempt)
            if item is not None:
                return item, attempt
            reject(task_id, attempt, reason, trace, attempt == cfg.max_attempts - 1)
        return None, cfg.max_attempts

    def meta(task_id: str, attempt: int) -> dict:
        return {"task_id": task_id, "attempt": attempt, "writer": writer.name,
                "judge": None if judge is None else judge.name}

    seen: set[str] = set()
    if "rrb" in cfg.tasks:
        if (out / "rrb.jsonl").exists():
            seen = {" ".join(json.loads(l)["query"].lower().split()) for l in (out / "rrb.jsonl").read_text().splitlines() if l.strip()}
        tasks = plan_rrb(catalog, nb, dict(cfg.rrb_per_tier), cfg.pool_size, cfg.seed, cfg.medium_min_sim)
        todo = [t for t in tasks if t.task_id not in done]
        stats["rrb/skipped_done"] += len(tasks) - len(todo)

        def make_rrb(task):
            return task, *attempt_loop(task.task_id, lambda a: make_rrb_item(
                task, catalog, writer, judge, seen, temp, a, cfg.judge_min_precision))

        for task, item, attempt in tqdm(ordered_map(make_rrb, todo, cfg.concurrency), total=len(todo), desc="RRB", unit="item"):
            if item is not None and " ".join(item["query"].lower().split()) in seen:  # a concurrent item wrote it first
                reject(task.task_id, attempt, "duplicate query (made concurrently)", item["query"], True)
                item = None
            if item is None:
                stats[f"rrb/{task.tier}/rejected"] += 1
                continue
            seen.add(" ".join(item["query"].lower().split()))
            gold = [tool_record(catalog[g]) for g in item["gold"]]
            w.append("rrb.jsonl", {
                "sample_id": str(uuid.uuid5(NAMESPACE, task.task_id)), "query": item["query"],
                "tool": gold[0] if len(gold) == 1 else gold,
                "analyzed_tools": [tool_record(catalog[p]) for p in item["pool"]],
                "complexity": task.tier, "generation": meta(task.task_id, attempt)})
            stats[f"rrb/{task.tier}/accepted"] += 1

    rng = np.random.default_rng(cfg.seed + 1)
    probe_tools = [catalog[int(i)] for i in rng.permutation(len(catalog))[: cfg.n_probes]]
    makers = {
        "mcq": lambda i, tool, a: make_mcq_item(tool, catalog, nb, writer, judge, temp, a, cfg.seed),
        "qa": lambda i, tool, a: make_qa_item(tool, "Yes" if i % 2 == 0 else "No", writer, judge, temp, a),
    }
    for kind in [k for k in ("mcq", "qa") if k in cfg.tasks]:
        todo = [(i, tool) for i, tool in enumerate(probe_tools) if f"{kind}-{i:05d}" not in done]
        stats[f"{kind}/skipped_done"] += len(probe_tools) - len(todo)

        def make_probe(job, kind=kind):
            i, tool = job
            return i, tool, *attempt_loop(f"{kind}-{i:05d}", lambda a: makers[kind](i, tool, a))

        for i, tool, item, attempt in tqdm(ordered_map(make_probe, todo, cfg.concurrency), total=len(todo), desc=kind.upper(), unit="item"):
            if item is None:
                stats[f"{kind}/rejected"] += 1
                continue
            tid = f"{kind}-{i:05d}"
            w.append(f"{kind}.jsonl", {"id": str(uuid.uuid5(NAMESPACE, tid)), **item, "tool": tool_record(tool),
                                       "generation": meta(tid, attempt)})
            stats[f"{kind}/accepted"] += 1

    summary = {"gen/" + k: v for k, v in sorted(stats.items())}
    summary["rejection_reasons"] = dict(reasons.most_common())
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    log.info("generation summary: %s", summary)
    return summary
