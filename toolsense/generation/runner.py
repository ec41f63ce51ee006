"""Generation run: plan tasks, make items (one by one, or ``concurrency`` at a time for API
LLMs; tqdm either way) and append each accepted item to its benchmark file and each rejection
to ``rejected.jsonl`` — both in plan order, whatever the concurrency — so an interrupted run
resumes where it stopped. Every file is a :class:`~toolsense.utils.jsonl.JsonlStore` (a torn
last line from a kill is cut on reopen); LLM replies are cached before they are used.

An item's attempts end in one of three ways: accepted; rejected for good (every attempt failed
a code check, the judge, or the API refused the request — recorded ``final``); or left for a
rerun when the service stayed unavailable through the client's retries (recorded, not final).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence, TypeVar

import numpy as np
from tqdm import tqdm

from toolsense.catalog import Catalog, Tool
from toolsense.catalog.config import load_from_config
from toolsense.catalog.tool import fold_text
from toolsense.endpoints.client import EndpointStop
from toolsense.generation import outputs
from toolsense.generation.checks import catalog_names
from toolsense.generation.config import GenerateConfig
from toolsense.generation.dedupe import Encode, QuestionDeduper, minilm_encoder
from toolsense.generation.guard import HeldOut
from toolsense.generation.llm import CachedLLM, ChatLLM, RequestRejected, ServiceUnavailable, build_llm
from toolsense.generation.pools import Neighbourhoods
from toolsense.generation.probes import make_mcq_item, make_qa_item
from toolsense.generation.prompts import usable_description
from toolsense.generation.rrb import make_rrb_item, plan_rrb
from toolsense.generation.sampling import stratified_sample
from toolsense.utils.errors import ConfigError
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.rundir import RunDir, busy_policy, holding
from toolsense.utils.secrets import Scrubber, scrubbed_job

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
NAMESPACE = uuid.UUID("5f0c1c52-8b3e-4d7e-9a53-0f6c2b1d7a11")


def tool_record(t: Tool) -> dict:
    """A tool in the released ToolSense file format."""
    return {"tool_name": t.raw_name or t.name, "tool_title": t.tool_title, "tool_description": t.tool_description,
            "api_title": t.api_title, "api_description": t.api_description}


def norm_query(q: str) -> str:
    return fold_text(q)


def ordered_map(fn: Callable[[T], R], items: Sequence[T], workers: int) -> Iterator[R]:
    """``fn`` over ``items``, results in order: lazily one by one (``workers`` = 1, so each
    result is seen before the next item starts) or ``workers`` threads at a time."""
    if workers == 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, items)


@dataclass
class Outcome:
    """What one task's attempts produced; rejections are written by the main thread, in plan order."""

    task_id: str
    item: dict | None = None
    attempt: int = 0
    rejections: list[dict] = field(default_factory=list)
    unavailable: bool = False


def attempt_loop(task_id: str, make, max_attempts: int) -> Outcome:
    """Up to ``max_attempts`` tries of ``make(attempt) -> (item, reason, trace)``."""
    res = Outcome(task_id)
    for attempt in range(max_attempts):
        res.attempt = attempt
        try:
            item, reason, trace = make(attempt)
        except RequestRejected as e:
            item, reason, trace = None, f"API refused the request: {e}", {}
        except ServiceUnavailable as e:
            res.unavailable = True
            res.rejections.append({"task_id": task_id, "attempt": attempt, "reason": "service unavailable (left for a rerun)",
                                   "trace": {"error": str(e)}, "final": False})
            return res
        if item is not None:
            res.item = item
            return res
        res.rejections.append({"task_id": task_id, "attempt": attempt, "reason": reason, "trace": trace,
                               "final": attempt == max_attempts - 1})
    return res


class _Run:
    """One generation run's state: stores, LLMs, the catalog and this run's counters."""

    def __init__(self, cfg: GenerateConfig, out: Path, catalog: Catalog, writer: ChatLLM, judge: ChatLLM | None,
                 scrub: Scrubber):
        self.cfg, self.out, self.catalog, self.writer, self.judge, self.scrub = cfg, out, catalog, writer, judge, scrub
        self.stores = {k: JsonlStore(out / f) for k, f in outputs.ITEM_FILES.items()}
        self.stores["rejected"] = JsonlStore(out / outputs.REJECTED_FILE, key=outputs.rejection_key)
        self.stats: Counter = Counter()
        finished = {row["task_id"] for row in self.stores["rejected"] if row.get("final")}
        self.done = finished | {r["generation"]["task_id"] for k in outputs.ITEM_FILES for r in self.stores[k]}
        self.last_service_error: str | None = None
        self.stopped: str | None = None
        self.collected = 0  # jobs whose outcome was collected (what an early stop did not leave for a rerun)
        """Why the run stopped early (:class:`EndpointStop`): every item not made is left for a rerun."""

    def append(self, kind: str, row: dict) -> None:
        """Write an accepted item, scrubbed of secrets like every row this run writes."""
        self.stores[kind].append(self.scrub(row))

    def meta(self, task_id: str, attempt: int) -> dict:
        return {"task_id": task_id, "attempt": attempt, "writer": self.writer.name,
                "judge": None if self.judge is None else self.judge.name}

    def execute(self, kind: str, jobs: list, task_id: Callable, make: Callable, accept: Callable, desc: str,
                skip: Callable | None = None, workers: int | None = None) -> None:
        """Run ``make(job, attempt)`` for the jobs not yet done, in plan order; ``accept(job, outcome)``
        writes an accepted item and may return False to have the job redone here (a clash with
        an item made concurrently). ``skip(job)`` may give a reason to reject a job without
        asking any LLM (recorded once, final). ``workers`` overrides ``concurrency``."""
        todo = [j for j in jobs if task_id(j) not in self.done] if not self.stopped else []
        self.stats[f"{kind}/skipped_done"] += len(jobs) - len(todo)

        def one(job):
            reason = skip(job) if skip else None
            if reason:
                return Outcome(task_id(job), rejections=[{"task_id": task_id(job), "attempt": 0, "reason": reason,
                                                          "trace": {}, "final": True}])
            return attempt_loop(task_id(job), lambda a: make(job, a), self.cfg.max_attempts)

        collected = self.collected
        try:
            self._collect(kind, todo, ordered_map(one, todo, workers or self.cfg.concurrency), accept, one, desc)
        except EndpointStop as e:  # unreachable, or the key refused: the rest waits for a rerun
            self.stopped = self.scrub(str(e))
            self.stats["left_for_rerun"] += len(todo) - (self.collected - collected)

    def _collect(self, kind: str, todo: list, work, accept: Callable, one: Callable, desc: str) -> None:
        """:meth:`execute`'s results in plan order: rejections written, accepted items kept."""
        for job, res in tqdm(zip(todo, work), total=len(todo), desc=desc, unit="item"):
            self.collected += 1
            if res.item is not None and not accept(job, res, dry=True):
                self.stats[f"{kind}/redone_after_concurrent_clash"] += 1
                res = one(job)  # replays cached replies; the clash is now an ordinary code-check rejection
            rejected = self.stores["rejected"]  # keyed: a redone item's replayed attempts are not written twice
            rows = [self.scrub(row) for row in res.rejections]
            rejected.extend(row for row in rows if outputs.rejection_key(row) not in rejected)
            if res.unavailable:
                self.stats["left_for_rerun"] += 1
                self.last_service_error = rows[-1]["trace"].get("error")
            elif res.item is not None:
                accept(job, res, dry=False)


def _run_rrb(r: _Run, nb: Neighbourhoods, held_out: HeldOut | None) -> None:
    cfg, catalog = r.cfg, r.catalog
    seen = {norm_query(row["query"]) for row in r.stores["rrb"]}
    tasks, clones = plan_rrb(catalog, nb, dict(cfg.rrb_per_tier), cfg.pool_k, cfg.seed, cfg.clones == "exclude", held_out)
    r.stats["rrb/clones_kept_out_of_pool"] = clones

    def make(task, a):
        return make_rrb_item(task, catalog, r.writer, r.judge, seen, cfg, a, held_out)

    def accept(task, res, dry):
        if dry:
            return norm_query(res.item["query"]) not in seen
        seen.add(norm_query(res.item["query"]))
        gold = [tool_record(catalog[g]) for g in res.item["gold"]]
        r.append("rrb", {
            "sample_id": str(uuid.uuid5(NAMESPACE, task.task_id)), "query": res.item["query"],
            "tool": gold[0] if len(gold) == 1 else gold,
            "analyzed_tools": [tool_record(catalog[p]) for p in res.item["pool"]],
            "complexity": task.tier, "anchor": catalog[task.anchor].raw_name or task.anchor,
            "clones_added": res.item["clones_added"], "judge": res.item.get("judge"),
            **({"split": "train"} if cfg.purpose == "training" else {}),  # Stage-2 sources read split=train
            "generation": r.meta(task.task_id, res.attempt)})
        return True

    r.execute("rrb", tasks, lambda t: t.task_id, make, accept, "RRB")


def qa_target(accepted: list[dict]) -> str:
    """The next QA answer: whichever of Yes/No has fewer *accepted* items so far (Yes on a tie),
    so rejections cannot unbalance the benchmark."""
    yes = sum(row["answer"] == "Yes" for row in accepted)
    return "Yes" if yes <= len(accepted) - yes else "No"


def _run_probes(r: _Run, nb: Neighbourhoods, encode: Encode | None) -> None:
    cfg, catalog = r.cfg, r.catalog
    probe_tools = [catalog[n] for n in stratified_sample(list(catalog), cfg.n_probes, cfg.seed + 1, key=lambda t: t.service)]
    temp = cfg.writer.temperature
    dedupe = {k: QuestionDeduper(encode, cfg.dedupe_cosine, [row["question"] for row in r.stores[k]]) for k in ("mcq", "qa")}
    names = catalog_names(catalog)
    makers = {
        "mcq": lambda tool, a: make_mcq_item(tool, catalog, nb, r.writer, r.judge, temp, a, cfg.seed, dedupe["mcq"], names),
        "qa": lambda tool, a: make_qa_item(tool, qa_target(r.stores["qa"].rows), r.writer, r.judge, temp, a, dedupe["qa"]),
    }
    for kind in [k for k in ("mcq", "qa") if k in cfg.tasks]:
        def accept(job, res, dry, kind=kind):
            if dry:
                return dedupe[kind].reason(res.item["question"]) is None
            tid = f"{kind}-{job[0]:05d}"
            dedupe[kind].add(res.item["question"])
            r.append(kind, {"id": str(uuid.uuid5(NAMESPACE, tid)), **res.item, "tool": tool_record(job[1]),
                                   "generation": r.meta(tid, res.attempt)})
            return True

        r.execute(kind, list(enumerate(probe_tools)), lambda job, kind=kind: f"{kind}-{job[0]:05d}",
                  lambda job, a, kind=kind: makers[kind](job[1], a), accept, kind.upper(),
                  skip=lambda job: None if usable_description(job[1]) else "card has no usable description",
                  workers=1 if kind == "qa" else None)  # each QA target depends on the items accepted before it


def run(cfg: GenerateConfig, writer: ChatLLM | None = None, judge: ChatLLM | None = None,
        catalog: Catalog | None = None, embeddings: np.ndarray | None = None, encode: Encode | None = None) -> dict:
    """Generate the configured benchmarks; returns the (cumulative) summary.
    ``writer``/``judge``/``catalog``/``embeddings``/``encode`` (the question encoder for
    near-duplicates; default MiniLM) may be passed in (tests, notebooks).

    One process per output folder: the folder's ``.lock`` (:meth:`RunDir.claim`) is held for the
    whole run; a second process stops naming the holder, or with ``TOOLSENSE_BUSY=skip`` returns
    ``{"skipped": "busy", ...}``, or with ``TOOLSENSE_BUSY=wait`` waits for it. The folder is
    claimed for this configuration (``generation_config.json``) only after every setting has been
    checked and the LLMs have started, so a failed start leaves nothing that refuses the corrected command.

    No secret reaches what the run writes or logs: the values of the ``api_key_env`` variables
    (and every other secret-looking one) and key-shaped text are scrubbed from replies, items,
    rejections, the summary, the data card, every log record and the error a run dies of
    (:mod:`toolsense.utils.secrets`)."""
    t0 = time.perf_counter()
    busy_policy()  # an invalid TOOLSENSE_BUSY is refused before the catalog loads
    catalog = catalog or load_from_config(cfg.catalog)
    check_against_catalog(cfg, catalog)
    ident = outputs.identity(cfg, catalog)
    out = Path(cfg.output_dir) if cfg.output_dir else outputs.default_output_dir(cfg.output_root, ident)
    keys = [llm.api_key_env for llm in (cfg.writer, cfg.judge) if llm is not None]
    # holding names the holder; TOOLSENSE_BUSY=wait logs whom it waits for
    with scrubbed_job(keys) as scrub, holding(out, "generating", [outputs.IDENTITY_FILE]) as held:
        if not held:
            return {"output_dir": str(out), "skipped": "busy", "holder": RunDir(out).holder() or "unknown"}
        return _generate(cfg, out, ident, catalog, writer, judge, embeddings, encode, t0, scrub)


def check_against_catalog(cfg: GenerateConfig, catalog: Catalog) -> None:
    """What only the catalog can tell, checked before any folder is touched."""
    if "rrb" in cfg.tasks and sum(cfg.rrb_per_tier.values()) and len(catalog) <= cfg.pool_k:
        raise ConfigError(f"pool_k={cfg.pool_k}: the catalog holds only {len(catalog)} tools (a pool is the anchor + pool_k others)")


def _generate(cfg: GenerateConfig, out: Path, ident: dict, catalog: Catalog, writer: ChatLLM | None, judge: ChatLLM | None,
              embeddings: np.ndarray | None, encode: Encode | None, t0: float, scrub: Scrubber) -> dict:
    """The run, with the folder's lock held."""
    if out.exists() and any(out.glob("*.jsonl")) and cfg.on_exists == "error":
        raise FileExistsError(f"{out} already holds generated files (on_exists=error)")
    outputs.claim_output_dir(out, ident, write=False)  # refused before anything loads
    log.info("generating into %s", out)
    nb = Neighbourhoods(catalog, cfg.encoder, embeddings)
    cache = JsonlStore(out / "llm_cache.jsonl")
    with ExitStack() as stack:  # a local server (backend=local) stops here, whatever happens

        def built(llm_cfg, section):
            llm = build_llm(llm_cfg, section)
            stack.callback(getattr(llm, "close", lambda: None))
            return CachedLLM(llm, cache, scrub.text)

        writer = writer or built(cfg.writer, "writer")
        if cfg.judge_enabled:
            judge = judge or (built(cfg.judge, "judge") if cfg.judge else writer)
        else:
            judge = None
        outputs.claim_output_dir(out, ident)  # everything started: the folder is this configuration's now
        r = _Run(cfg, out, catalog, writer, judge, scrub)
        held_out = HeldOut.from_files(list(cfg.exclude)) if cfg.exclude else None
        if "rrb" in cfg.tasks:
            _run_rrb(r, nb, held_out)
        if {"mcq", "qa"} & set(cfg.tasks):
            _run_probes(r, nb, encode or minilm_encoder(cfg.encoder))
    if r.stopped and not outputs.produced(out) and not cache.rows:  # refused before any item: nothing to summarise
        raise EndpointStop(r.stopped)  # (holding removes a fresh folder: the command wrote nothing)
    llms = {id(x): x for x in (writer, judge) if isinstance(x, CachedLLM)}.values()
    this_run = {"llm_calls": sum(x.calls for x in llms), "llm_cache_hits": sum(x.hits for x in llms),
                "wall_s": round(time.perf_counter() - t0, 3)}
    summary = outputs.summarise(out, r.stores, cache.rows, cfg.prices, dict(r.stats), outputs.record_invocation(out, this_run))
    if r.last_service_error:
        summary["gen/this_run/last_service_error"] = r.last_service_error
    if r.stopped:
        summary["gen/this_run/stopped"] = r.stopped
    for section, llm in (("writer", writer), ("judge", judge)):  # the ids the endpoints serve (GET /v1/models)
        if served := getattr(getattr(llm, "inner", llm), "served", None):
            summary[f"gen/served_model/{section}"] = served
    summary = scrub(summary)
    summary["output_dir"] = str(out)
    outputs.write_summary(out, summary, ident, time.perf_counter() - t0)
    log.info("generation summary: %s", summary)
    if r.stopped:  # the summary and every item made are written: one line (a user error, exit 2), the rest left for a rerun
        raise EndpointStop(r.stopped)
    return summary
