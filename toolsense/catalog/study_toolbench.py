"""``catalog=study_tools_tb``: the real-tools study's catalog plus the gold tools of a few hundred
real ToolBench test queries, so the study scores a second "standard" benchmark of real queries.

The template-written standard queries (data/verbose.py) imitate ToolBench; the real G1 / G2 / G3
test queries (StableToolBench's solvable ones, ``toolbench_queries/*.json``) are the thing itself.
Their gold tools are mostly not among the 1,000 of ``study_tools``, so this builder adds them
(role ``toolbench_gold``), query by query, always the query that needs the fewest tools not yet in
(ties in a seeded order), a query whole or not at all, while at most ``n_toolbench`` tools are
added. A gold tool already in the catalog under a name that differs only in case, spacing or
accents (``loose_key``) is that tool: the query's gold name is mapped to it. Tool records come from
the 46,984-tool catalog (``catalog=toolbench``: the best documentation of each ToolGen tool), built
on first use.

Written beside the catalog: ``<stem>.toolbench.jsonl``, the covered queries in our query JSONL
(``query_id`` = ``<file stem>/<id>``, ``tier`` = G1 / G2 / G3, gold names as in the catalog) —
``benchmark=study_toolbench`` — and the coverage counts in ``<stem>.coverage.json``.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from toolsense.catalog.builders import CATALOG_BUILDERS, coverage_path, default_output, ensure_built
from toolsense.catalog.queries import load_toolbench_queries
from toolsense.catalog.study_tools import N_TOOLS, SEED, build_study_tools_catalog
from toolsense.catalog.tool import loose_key
from toolsense.utils.errors import MissingFile
from toolsense.utils.io import iter_jsonl, sha256_text
from toolsense.utils.paths import atomic_write_text

QUERY_FILES = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category", "G3_instruction")
N_TOOLBENCH = 200
"""Gold tools added: 227 queries (G1 112, G2 68, G3 47) for 200 more tools (1,200 in all), ~20% more
training per run than study_tools'."""


def toolbench_path(out: str | Path) -> Path:
    """The covered ToolBench queries beside the catalog ``out``: ``<stem>.toolbench.jsonl``."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".jsonl") + ".toolbench.jsonl")


def select_queries(queries: list[tuple[str, Any]], have: dict[str, str], known: set[str], budget: int,
                   seed: int) -> tuple[list[tuple[str, Any, tuple[str, ...]]], list[str]]:
    """(covered (file stem, query, gold names as in the catalog), new tool names) as the module doc says.
    ``have``: loose key -> name of the tools already in; ``known``: names a record exists for."""
    rank = list(range(len(queries)))
    random.Random(f"{seed}:toolbench").shuffle(rank)
    order = {i: r for r, i in enumerate(rank)}
    have = dict(have)

    def gold(q) -> tuple[str, ...]:
        return tuple(have.get(loose_key(t), t) for t in q.tools)

    left = {i for i, (_, q) in enumerate(queries) if all(t in known or loose_key(t) in have for t in q.tools)}
    covered, new = [], []
    while left:
        best = min(left, key=lambda i: (sum(loose_key(t) not in have for t in queries[i][1].tools), order[i]))
        add = [t for t in dict.fromkeys(queries[best][1].tools) if loose_key(t) not in have]
        if len(new) + len(add) > budget:
            break
        for t in add:
            have[loose_key(t)] = t
        new += add
        covered.append((queries[best][0], queries[best][1], gold(queries[best][1])))
        left.remove(best)
    return covered, new


@CATALOG_BUILDERS.register("study_tools_tb")
def build_study_tools_tb_catalog(data_dir: str | Path, out: str | Path, n_tools: int = N_TOOLS,
                                 n_toolbench: int = N_TOOLBENCH, seed: int = SEED) -> dict[str, Any]:
    """Build ``out`` (study_tools' tools, then the added ToolBench gold tools), its ``.rrb.jsonl`` and
    ``.toolbench.jsonl``; returns the coverage (study_tools' counts plus ``toolbench``)."""
    d, out = Path(data_dir), Path(out)
    files = [d / "toolbench_queries" / f"{f}.json" for f in QUERY_FILES]
    missing = [str(p) for p in files if not p.is_file()]
    if missing:
        raise MissingFile(f"catalog study_tools_tb: ToolBench query files missing under {d}: {missing}")
    coverage = build_study_tools_catalog(d, out, n_tools, seed, name="study_tools_tb")
    base = [obj for _, obj in iter_jsonl(out)]
    full = ensure_built("toolbench", default_output("toolbench"), d, auto_build=True)
    records = {obj["tool_name"]: obj for _, obj in iter_jsonl(full)}
    queries = [(p.stem, q) for p in files for q in load_toolbench_queries(p)]
    covered, new = select_queries(queries, {loose_key(o["tool_name"]): o["tool_name"] for o in base}, set(records),
                                  n_toolbench, seed)
    text = "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in base + [records[t] for t in new])
    bench = "".join(json.dumps({"query_id": f"{stem}/{q.query_id}", "query": q.text, "tools": list(gold),
                                "tier": stem.split("_")[0], "style": "verbose", "split": "test"}, ensure_ascii=False) + "\n"
                    for stem, q, gold in covered)
    atomic_write_text(out, text)
    atomic_write_text(toolbench_path(out), bench)
    coverage["n_tools"] += len(new)
    coverage["sources"]["toolbench_gold"] = len(new)
    coverage["n_toolbench_requested"] = n_toolbench
    coverage["toolbench"] = {"covered": len(covered), "total": len(queries),
                             "covered_by_tier": dict(sorted(Counter(s.split("_")[0] for s, _, _ in covered).items())),
                             "path": str(toolbench_path(out)), "sha256": sha256_text(bench)}
    coverage["output"] = {"path": str(out), "sha256": sha256_text(text)}
    atomic_write_text(coverage_path(out), json.dumps(coverage, indent=2) + "\n")
    return coverage
