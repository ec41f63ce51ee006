"""Shared wording of docs/reference/paper_tables.md: benchmark titles, ToolGen's dense window and the
percentage cells, imported by the page, the density curve and the dense sample alike (a leaf, so
none of them imports another back)."""

from __future__ import annotations

from typing import Optional

from toolsense.metrics.intervals import Estimate
from toolsense.metrics.registry import METRICS

RC = {k: METRICS.key("Rc", k) for k in (1, 5, 50)}
"""The pages' hit-rate columns by cut-off (``RC[50]`` = ``Rc@50``, metrics/registry.py); ``recall@50``, ``NDCG@5``
and ``ToolGen NDCG@5`` are the paper page's own labels (paper/page.py)."""

DENSE_WINDOW = 5
"""ToolGen's encoder evaluation keeps only its top 5 (``indexer.search(query_embeddings, top_n=5)``)."""

BENCH_TITLES = {"G1": "G1 (474 solvable queries)", "G2": "G2 (230)", "G3": "G3 (61)",
                "rrb": "released RRB, part (243 of 500)"}


def pct(e: Optional[Estimate]) -> str:
    return "—" if e is None else f"{100 * e.value:.1f} [{100 * e.lo:.1f}, {100 * e.hi:.1f}]"


def signed(e: Estimate) -> str:
    return f"{100 * e.value:+.1f} [{100 * e.lo:+.1f}, {100 * e.hi:+.1f}]"


def contains(e: Estimate, value_pct: float) -> bool:
    return 100 * e.lo <= value_pct <= 100 * e.hi
