"""Human agreement on benchmark items (the paper: Fleiss' κ on 100 items each — 1.000 MCQ,
0.973 QA, 0.805 RRB).

    python evaluate.py task=annotate benchmark=mcq annotate.items=100 annotate.raters=3   # -> <out>/mcq_sheet.csv
    python evaluate.py task=kappa annotate.sheets=[mcq_filled.csv,qa_filled.csv]          # -> <out>/kappa.md, kappa.json

A sheet has one row per item: ``benchmark, item_id, question, options, gold, categories`` and one
empty ``rater_<i>`` column per rater. For MCQ/QA a rater answers the question (a letter of the
shown options / Yes or No); for a retrieval benchmark a rater judges whether the gold tools
serve the query (``annotate.retrieval_categories``). Sheets may be filled together (one file, a
column per rater) or separately (a copy per rater): ``task=kappa`` pools every non-empty rater
cell of every sheet per (benchmark, item) and computes κ per benchmark (stats.fleiss_kappa).
"""

from __future__ import annotations

import csv
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from toolsense.evaluation.benchmarks import Benchmark
from toolsense.evaluation.config import AnnotateConfig
from toolsense.evaluation.outputs import markdown_table, write_json
from toolsense.evaluation.probe_stats import LETTERS
from toolsense.evaluation.probes import permutation
from toolsense.evaluation.stats import fleiss_kappa
from toolsense.utils.io import DataError

FIXED = ["benchmark", "item_id", "question", "options", "gold", "categories"]


def sheet_rows(bench: Benchmark, cfg: AnnotateConfig) -> list[dict[str, str]]:
    """The sheet rows of a seeded sample of ``bench``'s items (in benchmark order)."""
    pick = sorted(random.Random(cfg.seed).sample(range(len(bench.items)), min(cfg.items, len(bench.items))))
    rows = []
    for it in (bench.items[i] for i in pick):
        if bench.kind == "retrieval":
            row = {"item_id": it.query_id, "question": it.text, "options": " ; ".join(it.tools), "gold": "",
                   "categories": "|".join(cfg.retrieval_categories)}
        elif bench.kind == "mcq":
            perm = permutation(it, "mcq", cfg.seed)  # the evaluation's own shuffle with the same seed
            letters = LETTERS[: len(perm)]
            row = {"item_id": it.item_id, "question": f"[{it.tool}] {it.question}",
                   "options": " | ".join(f"{letters[j]}. {it.options[p]}" for j, p in enumerate(perm)),
                   "gold": letters[perm.index(it.answer)], "categories": "|".join(letters)}
        else:
            row = {"item_id": it.item_id, "question": f"[{it.tool}] {it.question}", "options": " | ".join(it.options),
                   "gold": it.options[it.answer], "categories": "|".join(it.options)}
        rows.append({"benchmark": bench.name, **row, **{f"rater_{r + 1}": "" for r in range(cfg.raters)}})
    return rows


def write_sheet(bench: Benchmark, cfg: AnnotateConfig, out_dir: str | Path) -> Path:
    """``<out_dir>/<benchmark>_sheet.csv`` for raters; returns its path."""
    rows = sheet_rows(bench, cfg)
    path = Path(out_dir) / f"{bench.name}_sheet.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=FIXED + [f"rater_{r + 1}" for r in range(cfg.raters)])
        w.writeheader()
        w.writerows(rows)
    return path


def read_ratings(sheets: Sequence[str | Path]) -> dict[str, dict[str, Any]]:
    """``benchmark -> {"categories": [...], "items": {item_id: [rating, ...]}}`` pooled over the
    sheets; a rating outside the item's categories is an error naming file and line."""
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"categories": None, "items": defaultdict(list)})
    for sheet in map(Path, sheets):
        if not sheet.exists():
            raise FileNotFoundError(f"annotate.sheets: {sheet} does not exist")
        with open(sheet, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("benchmark", "item_id", "categories") if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"{sheet}: column(s) {missing} missing (not a task=annotate sheet?)")
            raters = [c for c in reader.fieldnames if c.startswith("rater")]
            for line, row in enumerate(reader, 2):
                cats = [c.strip().casefold() for c in row["categories"].split("|")]
                bench = out[row["benchmark"]]
                bench["categories"] = bench["categories"] or cats
                for r in raters:
                    v = (row.get(r) or "").strip().casefold()
                    if not v:
                        continue
                    if v not in cats:
                        raise DataError(f"{sheet}:{line}: {r}={row[r]!r} is not one of {row['categories']!r}")
                    bench["items"][row["item_id"]].append(v)
    return out


def kappas(sheets: Sequence[str | Path]) -> dict[str, dict[str, Any]]:
    """Fleiss' κ per benchmark from filled sheets. Items nobody rated are left out (counted);
    rated items must all carry the same number of ratings."""
    result = {}
    for bench, data in sorted(read_ratings(sheets).items()):
        items = {i: r for i, r in data["items"].items() if r}
        if not items:
            raise DataError(f"benchmark {bench!r}: no rating in {list(map(str, sheets))}")
        counts = {len(r) for r in items.values()}
        if len(counts) > 1:
            odd = min(items, key=lambda i: len(items[i]))
            raise DataError(f"benchmark {bench!r}: items carry {sorted(counts)} ratings (item {odd!r} has {len(items[odd])}); "
                            "every rated item needs the same number of raters")
        cats = data["categories"]
        matrix = [[r.count(c) for c in cats] for r in items.values()]
        result[bench] = {"kappa": fleiss_kappa(matrix), "items": len(items), "raters": counts.pop(), "categories": cats}
    return result


def run_kappa(cfg: AnnotateConfig, out_dir: str | Path) -> dict[str, Any]:
    if not cfg.sheets:
        raise ValueError("task=kappa needs annotate.sheets=[<filled sheet.csv>, ...]")
    res = kappas(cfg.sheets)
    out = Path(out_dir)
    table = markdown_table(["benchmark", "Fleiss κ", "items", "raters"],
                           [[b, f"{r['kappa']:.3f}", r["items"], r["raters"]] for b, r in res.items()])
    (out / "kappa.md").parent.mkdir(parents=True, exist_ok=True)
    (out / "kappa.md").write_text(table, encoding="utf-8")
    write_json(out / "kappa.json", {"sheets": list(cfg.sheets), "benchmarks": res})
    print(table)
    return res
