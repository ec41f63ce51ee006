"""The study's baselines over the full 46,984-tool ToolBench catalog (``catalog=toolbench``), beside
their numbers on the study's own catalog (issue 34, item 4): a small catalog of mostly gold tools is
easier, so a baseline on it is not the paper's baseline.

Each benchmark of the grid's BM25 evaluation (its ``results.json``: the benchmark section, the
baseline section and the benchmark file's sha256) is ranked again, the same loader and the same BM25
config, over the full catalog. A gold tool whose name is not in the full catalog is looked up up to case,
whitespace and transliteration (``tool.loose_key``, one match only); a query with a gold tool still
missing is left out and counted. The per-item hits are cached in
``<root>/.full_catalog/<label>.<benchmark sha256[:16]>.<baseline>.json`` (the catalog's sha256
inside; a rebuilt catalog recomputes), one file per benchmark written when it is done, so an
interrupted report resumes and a report rebuilt from the archive without the catalog reads them.
Dense needs the full catalog's embeddings (``python -m toolsense.paper --dense``); where they are
not cached it is said "not encoded", never computed here (47k tools take hours on 2 cores).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from toolsense.catalog import Catalog
from toolsense.catalog.config import CatalogConfig, load_from_config
from toolsense.metrics.intervals import bootstrap_indices, mean_ci
from toolsense.metrics.ranking import hit_at
from toolsense.metrics.registry import METRICS
from toolsense.reporting.tables import markdown_table, pct
from toolsense.utils.io import sha256_file
from toolsense.utils.paths import atomic_write_text, cache_root, local_path

CACHE = ".full_catalog"


class Cells(Protocol):
    """What is read of a study's grid (study/sweep.py: Sweep): its baseline rows and the results.json behind a cell."""

    def baseline(self, kind: str) -> str | None: ...

    def sources(self, row: str, col: str) -> dict[int, str]: ...

    def cell(self, row: str, col: str) -> dict | None: ...
BENCHES = ("standard", "realistic", "toolbench")


def full_catalog_config() -> CatalogConfig:
    """``conf/catalog/toolbench.yaml`` as a config: ToolGen's 46,984 tools, built into the cache from
    ``$TOOLSENSE_DATA`` (default ``../shared/data``) on first use."""
    return CatalogConfig(path=str(cache_root() / "catalogs" / "toolbench.jsonl"), format="toolsense", build="toolbench",
                         data_dir=os.environ.get("TOOLSENSE_DATA", "../shared/data"))


def dense_cached(catalog: Catalog, baseline: Mapping[str, Any]) -> bool:
    """Whether the embedding cache holds ``catalog`` encoded as the dense ``baseline`` section would
    (models/encoders/cache.py's key), so ranking with it encodes queries only."""
    from toolsense.models.encoders.cache import cache_root as embeddings_root
    from toolsense.models.encoders.cache import entry_key
    from toolsense.models.encoders.loading import encoder_identity

    identity = f"{encoder_identity(baseline.get('encoder'))}|{baseline.get('backend', 'torch')}"
    _, digest, _ = entry_key(catalog, identity, baseline.get("document", "tool_text"), True)
    return (embeddings_root() / f"{digest}.json").is_file()


def study_benchmarks(grid: Cells, k: int, baseline: str = "bm25") -> dict[str, dict[str, Any]]:
    """Label -> {benchmark section, baseline section, sha256, the study catalog's cell, its tools} of each
    benchmark the grid's ``baseline`` was evaluated on."""
    row, rc = grid.baseline(baseline), METRICS.key("Rc", k)
    out = {}
    for label in BENCHES:
        path = next(iter(grid.sources(row, f"{label} {rc}").values()), None) if row else None
        if not path:
            continue
        res = json.loads(Path(path).read_text(encoding="utf-8"))
        cfg = res.get("config") or {}
        bench, base = (cfg.get("benchmarks") or {}).get(label), (cfg.get("baselines") or {}).get(row)
        if bench and base:
            sha = (res.get("hashes") or {}).get("benchmark_sha256")
            out[label] = {"benchmark": bench, "baseline": base, "sha256": sha,
                          "study": grid.cell(row, f"{label} {rc}"), "n": res.get("n")}
    return out


def _resolver(catalog: Catalog) -> Callable[[str], str | None]:
    """A gold name as the catalog spells it: itself, else the one catalog name equal to it up to case,
    whitespace and transliteration (tool.loose_key; two such names: ambiguous, None)."""
    from collections import Counter

    from toolsense.catalog.tool import loose_key

    keys = {loose_key(n): n for n in catalog.names}
    seen = Counter(loose_key(n) for n in catalog.names)
    return lambda name: name if name in catalog else (keys[k] if seen[k := loose_key(name)] == 1 else None)


def score(bench: Mapping[str, Any], baseline: Mapping[str, Any], catalog: Catalog, ks: Sequence[int]) -> dict[str, Any]:
    """Per-item hits at ``ks`` of ``baseline`` over ``catalog`` on ``bench`` (sections as results.json holds them)."""
    from toolsense.baselines.config import BaselineConfig
    from toolsense.baselines.rankers import build_baseline
    from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark

    section = BenchmarkConfig(**{**bench, "path": local_path(bench.get("path"))})
    b = load_benchmark(section, f"benchmarks.{bench.get('label')}")
    resolve = _resolver(catalog)
    kept, dropped = [], 0
    for q in b.items:
        gold = [resolve(t) for t in q.tools]
        if gold and None not in gold:
            kept.append((q, gold))
        else:
            dropped += 1
    ranker = build_baseline(catalog, BaselineConfig(**baseline), max(ks))
    hits = {}
    for (q, gold), r in zip(kept, ranker.run([q for q, _ in kept])):
        ranking = [x["tool"] for x in r.constrained]
        hits[q.query_id] = [hit_at(ranking, gold, k) for k in ks]
    return {"ks": list(ks), "hits": hits, "dropped": dropped, "items": len(b.items), "tools": len(catalog),
            "gold_tools": len({t for q, gold in kept for t in gold})}


def full_catalog_baselines(grid: Cells, k: int, root: str | Path, resamples: int = 1000,
                           load: Callable[[], Catalog] | None = None, catalog_file: str | Path | None = None,
                           ks: Sequence[int] = (), baseline: str = "bm25") -> dict[str, dict[str, Any]]:
    """Label -> the study-catalog cell and the full catalog's Rc at ``ks`` (default k and 50), from the
    cache or computed (module doc); ``{"why": ...}`` for a benchmark that can be neither. ``load`` /
    ``catalog_file``: the full catalog and its file (default :func:`full_catalog_config`; tests: a small one).
    ``baseline="dense"`` ranks only where :func:`dense_cached` (else ``why``: "not encoded")."""
    ks = list(ks) or sorted({k, 50})
    cfg = full_catalog_config()
    catalog_file = Path(catalog_file or cfg.path)
    have = load is not None or catalog_file.is_file() or Path(cfg.data_dir or "").is_dir()
    load = load or (lambda: load_from_config(cfg))
    cat_sha = sha256_file(catalog_file) if catalog_file.is_file() else None
    catalog, out = None, {}
    for label, b in study_benchmarks(grid, k, baseline).items():
        base_id = "-".join(str(b["baseline"].get(x)) for x in ("kind", "document", "tokenizer", "scorer"))
        path = Path(root) / CACHE / f"{label}.{str(b['sha256'])[:16]}.{base_id}.json"
        cached = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        if cached and (cat_sha in (None, cached["catalog_sha256"])) and set(ks) <= set(cached["ks"]):
            out[label] = _summary(b, cached, ks, resamples)
            continue
        why = _unscorable(b) or (None if have else "the full catalog is not built here and ../shared/data is absent "
                                                  "(python -m toolsense.catalog.build toolbench)")
        if why:
            out[label] = {**b, "why": why}
            continue
        catalog = catalog or load()
        if b["baseline"].get("kind") == "dense" and not dense_cached(catalog, b["baseline"]):
            out[label] = {**b, "why": "not encoded"}
            continue
        cat_sha = cat_sha or (sha256_file(catalog_file) if catalog_file.is_file() else catalog.content_hash())
        res = {**score(b["benchmark"], b["baseline"], catalog, ks), "catalog_sha256": cat_sha,
               "benchmark_sha256": b["sha256"]}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(res) + "\n")
        out[label] = _summary(b, res, ks, resamples)
    return out


def _unscorable(b: Mapping[str, Any]) -> str | None:
    """Why a benchmark cannot be ranked again here: its file is absent, or not the file that was evaluated."""
    path = local_path(b["benchmark"].get("path"))
    if not path or not Path(path).is_file():
        return f"its file {b['benchmark'].get('path')} is not on this machine"
    if b["sha256"] and sha256_file(path) != b["sha256"]:
        return f"its file {b['benchmark'].get('path')} differs from the one the study evaluated (sha256)"
    return None


def _summary(b: Mapping[str, Any], res: Mapping[str, Any], ks: Sequence[int], resamples: int) -> dict[str, Any]:
    ids = sorted(res["hits"])
    idx = bootstrap_indices(len(ids), resamples, 0)
    full = {METRICS.key("Rc", k): mean_ci([res["hits"][i][res["ks"].index(k)] for i in ids], idx).to_dict()
            for k in ks} if ids else {}
    return {**b, "full": full, "scored": len(ids), "dropped": res["dropped"], "tools": res["tools"],
            "gold_tools": res["gold_tools"]}


def full_catalog_section(by_baseline: Mapping[str, Mapping[str, Mapping[str, Any]]], k: int) -> str:
    """A row per (baseline, benchmark): the study catalog's Rc@k beside the full catalog's Rc@k and Rc@50,
    then the full catalog's composition; a baseline not computed says why (dense: "not encoded")."""
    table, comp, lines, rc, rc50 = [], {}, [], METRICS.key("Rc", k), METRICS.key("Rc", 50)
    for name, rows in by_baseline.items():
        for label, r in rows.items():
            if "why" in r:
                lines.append(f"{name} on {label}: {r['why']}")
                continue
            table.append([name, label, pct(r["study"]), pct(r["full"].get(rc)), pct(r["full"].get(rc50)),
                          f"{r['scored']} of {r['scored'] + r['dropped']}"])
            comp[label] = (r["tools"], r["gold_tools"])
    if not table and not lines:
        return "No baseline evaluation of the grid to set beside the full catalog.\n"
    tools = next((t for t, _ in comp.values()), None)
    header = ["baseline", "benchmark", f"{rc}, study catalog", f"{rc}, full catalog", f"{rc50}, full catalog",
              "queries scored (gold in the full catalog)"]
    text = [markdown_table(header, table) if table else ""]
    if tools:
        text.append(f"\nThe full catalog: {tools:,} tools; per benchmark, its gold tools and the rest as distractors: "
                    + "; ".join(f"{label} {g:,} gold + {t - g:,} distractors" for label, (t, g) in comp.items()) + ".")
    if lines:
        text.append("\nNot computed: " + "; ".join(lines) + ". Dense needs the full catalog's embeddings cached "
                    "(`python -m toolsense.paper --dense`: hours on 2 cores); docs/reference/paper_tables.md has dense over "
                    "the full catalog on ToolBench G1/G2/G3 and the RRB part.")
    return "\n".join(text) + "\n"
