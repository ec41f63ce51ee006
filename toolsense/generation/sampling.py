"""Who gets an item: anchors stratified by domain, candidate pools of the anchor's K nearest
tools, and exact-text clones kept out of a pool.

Stratified allocation (:func:`allocate`): ``n`` items over domains (a tool's catalog category
when it has one, else its service — the part before ``&&``) in proportion to each domain's
tool count, at least one per domain, by largest remainder (ties by domain name). When ``n`` is
smaller than the number of domains, ``n`` domains are drawn (seeded, weighted by size) and get
one item each: not every domain can be covered then.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Callable

import numpy as np

from toolsense.catalog import Catalog, Tool
from toolsense.generation.checks import normalise
from toolsense.generation.prompts import usable_description
from toolsense.generation.topk import top_k_cosine


def domain_of(tool: Tool) -> str:
    return tool.category or tool.service


def allocate(sizes: dict[str, int], n: int, rng: np.random.Generator) -> dict[str, int]:
    """Items per domain: proportional to ``sizes``, each at least 1 and at most its size."""
    n = min(n, sum(sizes.values()))
    names = sorted(sizes)
    if n < len(names):
        p = np.array([sizes[d] for d in names], dtype=float)
        picked = rng.choice(len(names), size=n, replace=False, p=p / p.sum())
        return {names[int(i)]: 1 for i in sorted(picked)}
    total = sum(sizes.values())
    quota = {d: n * sizes[d] / total for d in names}
    alloc = {d: min(sizes[d], max(1, math.floor(quota[d]))) for d in names}
    while sum(alloc.values()) > n:  # the minimum of one pushed us over: take from the most over-served
        d = max((d for d in names if alloc[d] > 1), key=lambda d: (alloc[d] - quota[d], d))
        alloc[d] -= 1
    while sum(alloc.values()) < n:  # largest remainders first
        d = max((d for d in names if alloc[d] < sizes[d]), key=lambda d: (quota[d] - alloc[d], -names.index(d)))
        alloc[d] += 1
    return alloc


def stratified_sample(tools: list[Tool], n: int, seed: int, key: Callable[[Tool], str] = domain_of) -> list[str]:
    """``n`` distinct tool names, allocated over ``key`` domains by :func:`allocate`, drawn
    uniformly within each domain and returned in a seeded random order. Deterministic."""
    rng = np.random.default_rng(seed)
    groups: dict[str, list[str]] = defaultdict(list)
    for t in tools:
        groups[key(t)].append(t.name)
    alloc = allocate({d: len(v) for d, v in groups.items()}, n, rng)
    picked = [groups[d][int(i)] for d in sorted(alloc) for i in sorted(rng.choice(len(groups[d]), alloc[d], replace=False))]
    return [picked[int(i)] for i in rng.permutation(len(picked))]


def clone_key(tool: Tool) -> tuple[str, str, str]:
    """Tools with equal keys are exact-text clones (same titles and description, another name)."""
    return normalise(tool.tool_title or tool.service), normalise(tool.api_title or tool.api), normalise(usable_description(tool))


def anchor_pools(catalog: Catalog, emb: np.ndarray, anchors: list[str], k: int, drop_clones: bool) -> tuple[list[list[str]], int]:
    """Each anchor's pool: the anchor first, then its ``k`` nearest tools by cosine (rows of
    ``emb`` L2-normalised), best first. With ``drop_clones`` a candidate whose
    :func:`clone_key` equals one already in the pool is skipped (and the next one taken).
    Returns the pools and how many clones were skipped."""
    fetch = min(len(catalog), 2 * k + 1)
    idx, _ = top_k_cosine(emb[[catalog.index_of(a) for a in anchors]], emb, fetch)
    pools, skipped = [], 0
    for a, row in zip(anchors, idx):
        pool, keys = [a], {clone_key(catalog[a])}
        for j in _candidates(row, emb, catalog.index_of(a), fetch < len(catalog)):
            if len(pool) == k + 1:
                break
            t = catalog[int(j)]
            if t.name == a:
                continue
            if drop_clones and clone_key(t) in keys:
                skipped += 1
                continue
            pool.append(t.name)
            keys.add(clone_key(t))
        pools.append(pool)
    return pools, skipped


def _candidates(row: np.ndarray, emb: np.ndarray, i: int, more: bool):
    """The fetched neighbours, then (only if the pool is still short after skipping clones)
    the rest of the catalog by similarity."""
    yield from row
    if more:
        seen = set(int(j) for j in row)
        yield from (j for j in np.argsort(-(emb @ emb[i]), kind="stable") if int(j) not in seen)
