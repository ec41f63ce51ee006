"""A study catalog's section of a report: its composition (the coverage.json beside it) and how often
its standard test queries name their answer beside ToolBench's real ones (a generated benchmark is
trusted only once measured against what it imitates)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolsense.catalog import load_catalog, load_query_jsonl
from toolsense.catalog.builders import coverage_path
from toolsense.data.naming import TOOLBENCH_G1, naming_shares
from toolsense.data.verbose import default_output
from toolsense.reporting.tables import markdown_table
from toolsense.utils.paths import local_path

ROLE_TEXT = {"probe": "tools of the released MCQ / QA dev probes", "rrb_gold": "gold tools of released RRB dev items",
             "pool_negative": "hard negatives from the RRB items' 14-tool pools",
             "toolbench_gold": "gold tools of real ToolBench G1 / G2 / G3 test queries"}


def _scored_pairs(samples: Path) -> list[tuple[str, list[str]]]:
    """(query, gold tools) of each item a standard evaluation scored (its samples.jsonl; a torn last line skipped)."""
    out = []
    for line in samples.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if row.get("query") is not None:
            out.append((str(row["query"]), [str(g) for g in row.get("gold") or []]))
    return out


def catalog_section(run_cfg: dict[str, Any], scored: Path | None = None) -> str:
    """The catalog's composition (its coverage.json) and the naming rates of its standard test queries: those a run
    scored (``scored``: its standard samples.jsonl, the queries every finding on "standard" rests on) and the whole
    test split they were drawn from."""
    path = Path(local_path(str((run_cfg.get("catalog") or {}).get("path") or "")) or "")  # an archived config's $TOOLSENSE_CACHE
    cov_file = coverage_path(path) if path.name else None
    if cov_file is None or not cov_file.is_file():
        return "The catalog's composition is not recorded beside it (build it to see it).\n"
    cov = json.loads(cov_file.read_text(encoding="utf-8"))
    n = cov["n_tools"]
    rows = [[ROLE_TEXT.get(r, r), f"{c:,}", f"{100 * c / n:.1f}%"] for r, c in cov["sources"].items()]
    gold = sum(c for r, c in cov["sources"].items() if r not in ("pool_negative",))
    text = [f"{n:,} tools: {gold:,} are gold or probe tools of a scored item, {n - gold:,} distractors. Baselines on it "
            "are not comparable with the paper's over 46,984 tools (a small catalog of mostly gold tools is easier); "
            "`python -m toolsense.paper` gives them over the full catalog.\n", markdown_table(["role", "tools", "share"], rows)]
    tb = cov.get("toolbench")
    if tb:
        text.append(f"\nReal ToolBench test queries whose gold tools are all in it: {tb['covered']} of {tb['total']} "
                    f"({', '.join(f'{k} {v}' for k, v in tb['covered_by_tier'].items())}).")
    verbose = default_output(path)
    pairs = _scored_pairs(scored) if scored is not None and scored.is_file() else []
    if verbose.is_file() or pairs:
        by = {t.name: t for t in load_catalog(path)}
        test = load_query_jsonl(verbose, split="test") if verbose.is_file() else []
        rates = []
        if pairs:
            api, svc = naming_shares((q, by[t]) for q, gold in pairs for t in gold if t in by)
            rates.append(f"the {len(pairs)} scored standard queries name the API in {100 * api:.1f}% and the service in "
                         f"{100 * svc:.1f}% of (query, gold) pairs")
        if test:
            api, svc = naming_shares((q.text, by[t]) for q in test for t in q.tools if t in by)
            texts = {q.text for q in test}
            outside = sum(q not in texts for q, _ in pairs)
            split = ("the whole test split they were drawn from" if pairs and not outside else
                     f"the standard test split on this machine, which does not hold {outside} of the {len(pairs)} scored "
                     "queries (another generator or draw wrote them)" if outside else "the standard test split")
            rates.append(f"{split} (data/verbose.py v2, {len(test):,} queries): {100 * api:.1f}% and {100 * svc:.1f}%")
        text.append(f"\nNaming: {'; '.join(rates)}. ToolBench G1's real test queries: "
                    f"{100 * TOOLBENCH_G1.api:.1f}% and {100 * TOOLBENCH_G1.service:.1f}% ({TOOLBENCH_G1.pairs} pairs; "
                    "ours are higher where a description contains the name; generator v3, `stage2=verbose_v3`, "
                    "calibrates the draw so that its queries measure G1's rates). `benchmarks/verbose_vs_toolbench.py` "
                    "sets BM25 on both side by side on one catalog.")
    return "\n".join(text) + "\n"


