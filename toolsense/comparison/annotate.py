"""Human agreement on benchmark items (the paper: Fleiss' κ on 100 items each — 1.000 MCQ,
0.973 QA, 0.805 RRB).

    python annotate.py benchmark=mcq annotate.items=100 annotate.raters=3      # -> <out>/mcq_sheet.csv, mcq_key.csv
    python annotate.py task=kappa annotate.sheets=[mcq_filled.csv,qa_filled.csv]  # -> <out>/kappa.md, kappa.json

A sheet has one row per item: ``benchmark, item_id, question, options, categories`` and one
empty ``rater_<i>`` column per rater. For MCQ/QA a rater answers the question (a letter of the
shown options / Yes or No); for a retrieval benchmark a rater judges whether the gold tools
serve the query (``annotate.retrieval_categories``). Raters rate blind: the answer key
(``benchmark, item_id, gold``) goes to a separate ``<benchmark>_key.csv`` that is not handed out.
Sheets may be filled together (one file, a column per rater) or separately (a copy per rater):
``task=kappa`` pools every non-empty rater cell of every sheet per (benchmark, item), computes κ
per benchmark (stats.fleiss_kappa) and, from the key (``annotate.keys``, else the
``<benchmark>_key.csv`` beside a sheet), the raters' agreement with the gold answer.
"""

from __future__ import annotations

import csv
import logging
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from toolsense.comparison.stats import fleiss_kappa
from toolsense.data.prompts import LETTERS
from toolsense.evaluation.benchmarks import Benchmark, BenchmarkConfig, load_benchmarks
from toolsense.evaluation.outputs import write_json
from toolsense.evaluation.probes import permutation
from toolsense.reporting.tables import markdown_table
from toolsense.utils.choices import StrEnum, choice
from toolsense.utils.config import Seed, to_config
from toolsense.utils.errors import ConfigError, MissingFile
from toolsense.utils.io import DataError
from toolsense.utils.rundir import holding

log = logging.getLogger(__name__)
FIXED = ["benchmark", "item_id", "question", "options", "categories"]
KEY_COLUMNS = ["benchmark", "item_id", "gold"]


@dataclass
class AnnotateConfig:
    items: int = 100
    """Items sampled (seeded) from each benchmark into its sheet; all when the benchmark has fewer."""
    raters: int = 3
    """Empty rater columns in the sheet (rater_1 ... rater_<raters>)."""
    seed: Seed = 0
    """Seed of the item sample and of the MCQ option order shown to raters."""
    retrieval_categories: list[str] = field(default_factory=lambda: ["yes", "partly", "no"])
    """Answers a rater may give for a retrieval item: do the gold tools serve the query?"""
    sheets: list[str] = field(default_factory=list)
    """task=kappa: the filled sheets (CSV) to compute κ from."""
    keys: list[str] = field(default_factory=list)
    """task=kappa: the answer keys (``<benchmark>_key.csv``, written by task=annotate beside each
    sheet and kept from the raters); empty = any key file lying beside a sheet."""

    def __post_init__(self) -> None:
        if self.items < 1 or self.raters < 2:
            raise ValueError(f"annotate.items must be >= 1 and annotate.raters >= 2 (got {self.items}, {self.raters})")
        cats = [c.strip().casefold() for c in self.retrieval_categories]
        if len(cats) < 2 or len(set(cats)) < len(cats) or not all(cats):
            raise ValueError(f"annotate.retrieval_categories needs two or more distinct, non-empty answers, got "
                             f"{list(self.retrieval_categories)}")


class RatingTask(StrEnum):
    sheets = "sheets"
    """A blind rating sheet per configured benchmark, its answer key in a separate file."""
    kappa = "kappa"
    """Fleiss' kappa per benchmark from filled sheets (``annotate.sheets``), agreement with the keys."""


@dataclass
class AnnotateJobConfig:
    """Schema of ``conf/annotate.yaml`` (registered as ``annotate_schema``): ``python annotate.py``."""

    benchmark: Optional[BenchmarkConfig] = None
    """One benchmark (``benchmark=<name>``) to sample a sheet from."""
    benchmarks: dict[str, BenchmarkConfig] = field(default_factory=dict)
    """Several, by label (``+benchmark@benchmarks.<label>=<name>``); replaces ``benchmark``."""
    annotate: AnnotateConfig = field(default_factory=AnnotateConfig)
    task: RatingTask = RatingTask.sheets
    output_dir: Optional[str] = None
    """None = Hydra's (timestamped) output dir; outside Hydra, outputs/annotate."""

    def __post_init__(self) -> None:
        self.task = choice(RatingTask, self.task, "task")


def sheet_rows(bench: Benchmark, cfg: AnnotateConfig) -> list[dict[str, str]]:
    """The rows of a seeded sample of ``bench``'s items (in benchmark order), each with its
    ``gold`` answer (a letter of the shown options / Yes or No; "" for retrieval, where the rater
    judges the gold tools): :func:`write_sheet` splits the gold off into the key."""
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


def write_sheet(bench: Benchmark, cfg: AnnotateConfig, out_dir: str | Path) -> tuple[Path, Path]:
    """``<out_dir>/<benchmark>_sheet.csv`` for raters (no gold answer in it) and
    ``<out_dir>/<benchmark>_key.csv`` (the gold answers, kept from the raters); returns both paths."""
    rows = sheet_rows(bench, cfg)
    sheet, key = Path(out_dir) / f"{bench.name}_sheet.csv", Path(out_dir) / f"{bench.name}_key.csv"
    sheet.parent.mkdir(parents=True, exist_ok=True)
    _write_csv(sheet, FIXED + [f"rater_{r + 1}" for r in range(cfg.raters)], [{k: v for k, v in r.items() if k != "gold"} for r in rows])
    _write_csv(key, KEY_COLUMNS, [{k: r[k] for k in KEY_COLUMNS} for r in rows])
    return sheet, key


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict[str, str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(columns))
        w.writeheader()
        w.writerows(rows)


def read_key(path: str | Path) -> dict[tuple[str, str], str]:
    """``(benchmark, item_id) -> gold`` from a key file (""-gold rows, retrieval items, left out)."""
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if [c for c in KEY_COLUMNS if c not in (reader.fieldnames or [])]:
            raise DataError(f"{path}: needs columns {KEY_COLUMNS} (not a task=annotate key file?)")
        return {(r["benchmark"], r["item_id"]): r["gold"].strip().casefold() for r in reader if (r["gold"] or "").strip()}


def read_ratings(sheets: Sequence[str | Path]) -> dict[str, dict[str, Any]]:
    """``benchmark -> {"categories": [...], "items": {item_id: [rating, ...]}}`` pooled over the
    sheets; a rating outside the item's categories is an error naming file and line."""
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"categories": None, "items": defaultdict(list)})
    for sheet in map(Path, sheets):
        if not sheet.exists():
            raise MissingFile(f"annotate.sheets: {sheet} does not exist")
        with open(sheet, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("benchmark", "item_id", "categories") if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"{sheet}: column(s) {missing} missing (not a task=annotate sheet?)")
            raters = [c for c in reader.fieldnames if c.startswith("rater")]
            if "gold" in reader.fieldnames:
                log.warning("%s shows the gold answer beside the rater columns (written by an older toolsense): "
                            "its raters did not rate blind", sheet)
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


def kappas(sheets: Sequence[str | Path], keys: Sequence[str | Path] = ()) -> dict[str, dict[str, Any]]:
    """Fleiss' κ per benchmark from filled sheets. Items nobody rated are left out (counted);
    rated items must all carry the same number of ratings. ``agreement``: the share of ratings
    that match the answer key (``keys``, else any ``<benchmark>_key.csv`` beside a sheet), None
    for a benchmark without a key (retrieval items have none: raters judge the gold tools)."""
    result = {}
    ratings = read_ratings(sheets)
    key = _keys(sheets, ratings, keys)
    for bench, data in sorted(ratings.items()):
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
        result[bench] = {"kappa": fleiss_kappa(matrix), "items": len(items), "raters": counts.pop(), "categories": cats,
                         "agreement": _agreement(bench, items, key)}
    return result


def _keys(sheets: Sequence[str | Path], ratings: dict[str, Any], keys: Sequence[str | Path]) -> dict[tuple[str, str], str]:
    """The pooled answer keys: the files of ``annotate.keys`` (each must exist), else every
    ``<benchmark>_key.csv`` that lies beside one of the sheets."""
    for k in keys:
        if not Path(k).is_file():
            raise MissingFile(f"annotate.keys: {k} does not exist")
    beside = {Path(s).parent / f"{b}_key.csv" for s in sheets for b in ratings}
    found = [Path(k) for k in keys] or sorted(p for p in beside if p.is_file())
    out: dict[tuple[str, str], str] = {}
    for path in found:
        out.update(read_key(path))
    return out


def _agreement(bench: str, items: dict[str, list[str]], key: dict[tuple[str, str], str]) -> float | None:
    """Share of the ratings of ``bench`` equal to the key's gold answer; None without a key.
    A key that holds the benchmark but not one of its rated items is another sample: refused."""
    if not any(b == bench for b, _ in key):
        return None
    lost = [i for i in items if (bench, i) not in key]
    if lost:
        raise DataError(f"benchmark {bench!r}: the answer key has no gold for rated item(s) {lost[:3]} "
                        "(a key of another sample? pass the sheet's own with annotate.keys=[...])")
    pairs = [(r, key[(bench, i)]) for i, rs in items.items() for r in rs]
    return sum(r == g for r, g in pairs) / len(pairs)


def run_kappa(cfg: AnnotateConfig, out_dir: str | Path) -> dict[str, Any]:
    if not cfg.sheets:
        raise ConfigError("task=kappa needs annotate.sheets=[<filled sheet.csv>, ...]")
    res = kappas(cfg.sheets, cfg.keys)
    out = Path(out_dir)
    table = markdown_table(["benchmark", "Fleiss κ", "items", "raters", "agreement with key %"],
                           [[b, f"{r['kappa']:.3f}", r["items"], r["raters"],
                             "—" if r["agreement"] is None else f"{100 * r['agreement']:.1f}"] for b, r in res.items()])
    (out / "kappa.md").parent.mkdir(parents=True, exist_ok=True)
    (out / "kappa.md").write_text(table, encoding="utf-8")
    write_json(out / "kappa.json", {"sheets": list(cfg.sheets), "keys": list(cfg.keys), "benchmarks": res})
    print(table)
    return res


def write_sheets(cfg: AnnotateJobConfig, out: Path) -> dict[str, Any]:
    """A rating sheet per configured benchmark under ``out``, its answer key in a separate file
    (raters rate blind; ``task=kappa`` reads it)."""
    sheets, keys = {}, {}
    for label, bench in load_benchmarks(cfg.benchmark, cfg.benchmarks).items():
        sheet, key = write_sheet(bench, cfg.annotate, out)
        sheets[label], keys[label] = str(sheet), str(key)
        print(f"wrote {sheet} ({min(cfg.annotate.items, len(bench.items))} items, {cfg.annotate.raters} rater columns) "
              f"for the raters and its answer key {key} (keep it from them; task=kappa reads it)")
    return {"sheets": sheets, "keys": keys}


def run(cfg: AnnotateJobConfig | Mapping, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Entry point of ``annotate.py``: the sheets (``task=sheets``) or κ (``task=kappa``) into
    ``output_dir`` (default ``cfg.output_dir``, else outputs/annotate), the folder held by one
    process at a time."""
    cfg = to_config(AnnotateJobConfig, cfg)
    out = Path(output_dir or cfg.output_dir or "outputs/annotate")
    out.mkdir(parents=True, exist_ok=True)
    with holding(out, "rating") as held:
        if not held:
            return {"skipped": str(out)}
        return run_kappa(cfg.annotate, out) if cfg.task == RatingTask.kappa else write_sheets(cfg, out)


def register_configs() -> None:
    """Register :class:`AnnotateJobConfig` as ``annotate_schema`` (annotate.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("annotate_schema", AnnotateJobConfig)
