"""Realistic Retrieval Benchmark items: plan (which gold tools, which pool) and make (write,
check by code, judge by LLM).

Tiers: ``easy`` — one tool; ``medium`` — a tool and its functional equivalents in other
services (cosine ≥ ``medium_min_sim``), any of which answers; ``hard`` — 4–8 tools from one
neighbourhood that one task needs together. Every item's candidate pool (``analyzed_tools``)
is the gold plus the hardest negatives, ``pool_size`` in all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolsense.catalog import Catalog
from toolsense.generation import prompts
from toolsense.generation.checks import check_query
from toolsense.generation.llm import ChatLLM, ask_judge, ask_json, unparsed_reason
from toolsense.generation.pools import Neighbourhoods

MAX_WORDS = {"easy": 25, "medium": 25, "hard": 60}


@dataclass
class RRBTask:
    task_id: str
    tier: str
    gold: list[str]
    pool: list[str]


def plan_rrb(catalog: Catalog, nb: Neighbourhoods, per_tier: dict[str, int], pool_size: int, seed: int,
             medium_min_sim: float = 0.55, hard_size: tuple[int, int] = (4, 8)) -> list[RRBTask]:
    """Deterministic given ``seed``: the same catalog and settings always plan the same tasks."""
    rng = np.random.default_rng(seed)
    order = [catalog[int(i)].name for i in rng.permutation(len(catalog))]
    tasks: list[RRBTask] = []
    for tier, n in per_tier.items():
        made = 0
        for name in order:
            if made == n:
                break
            if tier == "easy":
                gold = [name]
            elif tier == "medium":
                eq = [m for m in nb.nearest(name, 3, other_service=True) if nb.similarity(name, m) >= medium_min_sim]
                if not eq:
                    continue
                gold = [name] + eq[:2]
            elif tier == "hard":
                k = int(rng.integers(hard_size[0], hard_size[1] + 1))
                near = nb.nearest(name, 4 * k)
                picks = list(rng.choice(len(near), size=min(k - 1, len(near)), replace=False))
                gold = [name] + [near[int(j)] for j in sorted(picks)]
                if len(gold) < hard_size[0]:
                    continue
            else:
                raise ValueError(f"unknown RRB tier {tier!r}; choose easy, medium or hard")
            tasks.append(RRBTask(f"rrb-{tier}-{made:05d}", tier, gold, nb.pool(gold, max(pool_size, len(gold)), rng)))
            made += 1
    return tasks


def judge_accepts(selected: set[str], gold: list[str], tier: str, min_precision: float) -> bool:
    hit = selected & set(gold)
    if not selected or not hit:
        return False
    precision = len(hit) / len(selected)
    recall = len(hit) / len(gold)
    return precision >= min_precision and (tier != "hard" or recall >= 0.5)


def make_rrb_item(task: RRBTask, catalog: Catalog, writer: ChatLLM, judge: ChatLLM | None, seen: set[str],
                  temperature: float, attempt: int, min_precision: float) -> tuple[dict | None, str | None, dict]:
    """Returns (item or None, rejection reason or None, trace of what the LLMs said)."""
    tools = [catalog[g] for g in task.gold]
    obj, reply = ask_json(writer, prompts.rrb_writer(tools, task.tier, MAX_WORDS[task.tier]), stage="rrb_writer",
                          schema=prompts.SCHEMAS["rrb_writer"], temperature=temperature, seed=attempt)
    trace = {"writer_reply": str(reply)}
    if obj is None:
        return None, unparsed_reason(reply, "writer reply"), trace
    query = obj.get("query")
    reason = check_query(query, tools, MAX_WORDS[task.tier], seen)
    if reason:
        return None, reason, trace
    if judge is not None:
        pool = [catalog[p] for p in task.pool]
        verdict, trace["judge_replies"] = ask_judge(judge, prompts.rrb_judge(query, pool), stage="rrb_judge",
                                                    schema=prompts.SCHEMAS["rrb_judge"])
        if verdict is None:
            return None, "judge reply is not a JSON object", trace
        nums = verdict.get("tools") if isinstance(verdict.get("tools"), list) else []
        selected = {pool[n - 1].name for n in nums if isinstance(n, int) and 1 <= n <= len(pool)}
        trace["judge_selected"] = sorted(selected)
        if not judge_accepts(selected, task.gold, task.tier, min_precision):
            return None, "judge disagrees with the gold tools", trace
    return {"query": query.strip(), "gold": task.gold, "pool": task.pool, "complexity": task.tier}, None, trace
