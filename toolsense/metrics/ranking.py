"""Retrieval metrics of one query: one ranking against its gold tools.

A *ranking* is a list of tool names in rank order; ``None`` marks an output that is not a tool
(free-form decoding can produce text). Gold is the set of canonical tool names of a query. Each
function here is a registered metric's per-item function (registry.py gives it its names):

- hit@k (Rc@k for constrained rankings, Rf@k for free-form): 1 if any gold tool is in the top k.
- recall@k: fraction of the gold tools found in the top k ("full recall" at k = beam width).
- COMP@k (completeness): 1 if *every* gold tool is in the top k; the test that fits multi-answer
  queries (RRB medium / hard: 2-3 and 4-8 gold tools), where hit@k credits one of them.
- R-precision: the fraction of the top |gold| that is gold (= recall at |gold|), one number per
  query that needs no cut-off and scales with the number of answers (trec_eval's ``Rprec``).
- NDCG@k with binary gains; the ideal DCG counts *all* gold tools (min(k, |gold|) ideal hits),
  not only the ones retrieved — a model that finds one of four gold tools does not score 1.
- IS@k = Rf@k / Rc@k, and 0 when Rc@k = 0: a ratio of two means, with its interval in
  intervals.py (:func:`~toolsense.metrics.intervals.is_ci`).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

Ranking = Sequence[str | None]


def hit_at(ranking: Ranking, gold: Iterable[str], k: int) -> float:
    gold = set(gold)
    return float(any(t in gold for t in ranking[:k] if t is not None))


def recall_at(ranking: Ranking, gold: Iterable[str], k: int) -> float:
    gold = set(gold)
    if not gold:
        raise ValueError("recall is undefined for a query without gold tools")
    found = {t for t in ranking[:k] if t is not None and t in gold}
    return len(found) / len(gold)


def complete_at(ranking: Ranking, gold: Iterable[str], k: int) -> float:
    """COMP@k: 1.0 if every gold tool is among the top k (``None`` outputs count as misses)."""
    gold = set(gold)
    if not gold:
        raise ValueError("COMP@k is undefined for a query without gold tools")
    return float(gold <= {t for t in ranking[:k] if t is not None})


def r_precision(ranking: Ranking, gold: Iterable[str]) -> float:
    """R-precision: distinct gold tools in the top R = |gold|, divided by R (a tool repeated in
    the ranking is found once; a ranking shorter than R simply finds fewer)."""
    gold = set(gold)
    if not gold:
        raise ValueError("R-precision is undefined for a query without gold tools")
    return recall_at(ranking, gold, len(gold))


def ndcg_at(ranking: Ranking, gold: Iterable[str], k: int) -> float:
    gold = set(gold)
    if not gold:
        raise ValueError("NDCG is undefined for a query without gold tools")
    seen: set[str] = set()
    dcg = 0.0
    for i, t in enumerate(ranking[:k]):
        if t is not None and t in gold and t not in seen:  # a repeated tool earns no second gain
            seen.add(t)
            dcg += 1.0 / math.log2(i + 2)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / idcg


def internalization_score(rf: float, rc: float) -> float:
    """IS = Rf / Rc; defined as 0 when Rc = 0 (nothing to internalise was retrieved)."""
    return 0.0 if rc == 0 else rf / rc
