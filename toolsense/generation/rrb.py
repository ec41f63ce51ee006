"""Realistic Retrieval Benchmark items, by the ToolSense protocol (§3.1-3.2).

Plan: anchors τ stratified by domain (:mod:`~toolsense.generation.sampling`); each anchor's
pool P(τ) = τ plus its K nearest tools by cosine, shuffled. Make: the writer sees τ, P(τ), the
tier and few-shot requests and returns a query *and its answer set* A ⊆ P(τ); code checks
A ⊆ P(τ), τ ∈ A, |A| fits the tier (easy 1, medium 2-3, hard ≥4) and that the query names no
answer tool; the judge scores the paper's rubric (naturalness, tier compliance, label
correctness, 1-5) and audits the whole pool: a pool tool it finds fulfils the query but is not
in A is added to the gold (``fn_policy=relabel``) or sinks the item (``reject``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolsense.catalog import Catalog
from toolsense.generation import prompts
from toolsense.generation.checks import TIER_SIZES, check_answer_set, check_query, copies_example, leaked_names
from toolsense.generation.config import GenerateConfig
from toolsense.generation.guard import HeldOut
from toolsense.generation.llm import ChatLLM, ask_json, ask_judge, unparsed_reason
from toolsense.generation.pools import Neighbourhoods
from toolsense.generation.sampling import anchor_pools, clone_key, stratified_sample

MAX_WORDS = {"easy": 25, "medium": 25, "hard": 60}


@dataclass
class RRBTask:
    task_id: str
    tier: str
    anchor: str
    pool: list[str]
    """P(τ) in the order shown to the writer and judge (shuffled; the anchor somewhere in it)."""


def plan_rrb(catalog: Catalog, nb: Neighbourhoods, per_tier: dict[str, int], pool_k: int, seed: int,
             drop_clones: bool = True, held_out: HeldOut | None = None) -> tuple[list[RRBTask], int]:
    """Deterministic given ``seed``. Anchors: ``sum(per_tier)`` tools with a usable description
    (and, with ``held_out``, no excluded benchmark's gold tool), stratified by domain; tiers are
    dealt to them in order. Returns the tasks and how many clones were kept out of the pools."""
    held = held_out.tools if held_out else frozenset()
    eligible = [t for t in catalog if prompts.usable_description(t) and t.name not in held]
    anchors = stratified_sample(eligible, sum(per_tier.values()), seed)
    tiers = [tier for tier, n in per_tier.items() for _ in range(n)][: len(anchors)]
    pools, skipped = anchor_pools(catalog, nb.emb, anchors, pool_k, drop_clones)
    tasks, made = [], {t: 0 for t in per_tier}
    for k, (tier, anchor, pool) in enumerate(zip(tiers, anchors, pools)):
        order = np.random.default_rng([seed, k]).permutation(len(pool))
        tasks.append(RRBTask(f"rrb-{tier}-{made[tier]:05d}", tier, anchor, [pool[int(i)] for i in order]))
        made[tier] += 1
    return tasks, skipped


def make_rrb_item(task: RRBTask, catalog: Catalog, writer: ChatLLM, judge: ChatLLM | None, seen: set[str],
                  cfg: GenerateConfig, attempt: int, held_out: HeldOut | None = None) -> tuple[dict | None, str | None, dict]:
    """Returns (item or None, rejection reason or None, trace of what the LLMs said)."""
    pool = [catalog[p] for p in task.pool]
    messages = prompts.rrb_writer(catalog[task.anchor], pool, task.tier, MAX_WORDS[task.tier], list(getattr(cfg.few_shot, task.tier)))
    obj, reply = ask_json(writer, messages, stage="rrb_writer", schema=prompts.SCHEMAS["rrb_writer"],
                          temperature=cfg.writer.temperature, seed=attempt)
    trace = {"writer_reply": str(reply)}
    if obj is None:
        return None, unparsed_reason(reply, "writer reply"), trace
    query = obj.get("query")
    reason = check_query(query, [], MAX_WORDS[task.tier], seen)
    shots = [e for tier in ("easy", "medium", "hard") for e in getattr(cfg.few_shot, tier)]
    if not reason and copies_example(query, shots):
        reason = "query copies a few-shot example"
    if reason:
        return None, reason, trace
    answer, reason = check_answer_set(obj.get("tools"), task.pool, task.anchor, task.tier)
    if reason:
        return None, reason, trace
    leaked = leaked_names(query, [catalog[a] for a in answer])
    if leaked:
        return None, f"query names the tool: {leaked}", trace
    item = {"query": query.strip(), "gold": answer, "pool": task.pool, "complexity": task.tier, "clones_added": []}
    if cfg.clones == "gold":
        keys = {clone_key(catalog[a]) for a in answer}
        item["clones_added"] = [p for p in task.pool if p not in answer and clone_key(catalog[p]) in keys]
        item["gold"] = answer + item["clones_added"]
    reason = held_out.reason(item["query"], item["gold"]) if held_out else None
    if reason:
        return None, reason, trace
    if judge is None:
        return item, None, trace
    return judge_rrb_item(item, task, catalog, judge, cfg, trace, held_out)


def judge_rrb_item(item: dict, task: RRBTask, catalog: Catalog, judge: ChatLLM, cfg: GenerateConfig, trace: dict,
                   held_out: HeldOut | None) -> tuple[dict | None, str | None, dict]:
    """Rubric scores against ``cfg.rubric_min`` and the whole-pool false-negative audit; the
    scores and per-pool-tool verdicts are saved with the item (``item["judge"]``)."""
    numbers = [task.pool.index(g) + 1 for g in item["gold"]]
    pool = [catalog[p] for p in task.pool]
    verdict, trace["judge_replies"] = ask_judge(judge, prompts.rrb_judge(item["query"], pool, task.tier, numbers),
                                                stage="rrb_judge", schema=prompts.SCHEMAS["rrb_judge"])
    if verdict is None:
        return None, "judge reply is not a JSON object", trace
    scores = {k: verdict.get(k) for k in prompts.RUBRIC}
    if not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 5 for v in scores.values()):
        return None, "judge reply lacks rubric scores (integers 1-5)", trace
    nums = verdict.get("satisfying") if isinstance(verdict.get("satisfying"), list) else []
    satisfying = {task.pool[n - 1] for n in nums if isinstance(n, int) and 1 <= n <= len(pool)}
    verdicts = {p: p in satisfying for p in task.pool}
    missed = [p for p in task.pool if verdicts[p] and p not in item["gold"]]
    item["judge"] = trace["judge"] = {"scores": scores, "pool_verdicts": verdicts, "relabelled": []}
    low = sorted(k for k, v in scores.items() if v < cfg.rubric_min.get(k, 1))
    if low:
        return None, f"judge scores below rubric_min: {low}", trace
    if task.anchor not in satisfying:
        return None, "judge: the anchor does not fulfil the query", trace
    if missed and cfg.fn_policy == "reject":
        return None, "judge found unlabelled positives in the pool (fn_policy=reject)", trace
    if missed:
        lo, hi = TIER_SIZES[task.tier]
        n = len(item["gold"]) + len(missed) - len(item["clones_added"])
        if n < lo or (hi is not None and n > hi):
            return None, f"relabelled answer set of {n} does not fit tier {task.tier}", trace
        reason = held_out.reason(item["query"], missed) if held_out else None
        if reason:
            return None, reason, trace
        item["gold"] = item["gold"] + missed
        item["judge"]["relabelled"] = missed
    return item, None, trace
