"""What the undocumented half of our catalog does to BM25.

Of ``catalog=toolbench``'s 46,984 tools, 22,475 have no API description in the public data
(only their service's text or their names), while the paper's BM25 indexes ToolBench's corpus,
where every API has its record. Whether that makes our BM25 easier (fewer real competitors) or
harder (short name-only documents that BM25's length normalisation favours) is measured here:
BM25 (ours and ToolGen's) on catalogs that keep every gold tool and all, half or a quarter of the
*documented* other tools (seeded), with the undocumented ones out. The change per halving of
documented distractors is the slope the page extrapolates from.

Written to ``<out>/density.json`` (computed once; delete it to recompute).
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any, Mapping, Sequence

from toolsense.catalog import Catalog
from toolsense.evaluation.metrics import bootstrap_indices, hit_at, mean_ci
from toolsense.utils.paths import atomic_write_text

log = logging.getLogger(__name__)

FRACTIONS = {"documented": 1.0, "documented_half": 0.5, "documented_quarter": 0.25}
"""Subset name -> share of the documented non-gold tools kept (seeded)."""
KS = (5, 50)


def documented(tool) -> bool:
    """A tool the public data describes at API level (not only by its service's text or name)."""
    return bool(tool.api_description.strip())


def subsets(catalog: Catalog, gold: set[str], seed: int = 0) -> dict[str, Catalog]:
    """``all`` plus, per :data:`FRACTIONS`, every gold tool and that share of the documented others."""
    others = [t.name for t in catalog if documented(t) and t.name not in gold]
    rng = random.Random(seed)
    shuffled = rng.sample(others, len(others))
    out = {"all": catalog}
    for name, frac in FRACTIONS.items():
        out[name] = catalog.subset(gold | set(shuffled[: round(frac * len(others))]))
    return out


def score(ranker, queries: Sequence, resamples: int = 1000) -> dict[str, Any]:
    hits: dict[int, list[float]] = {k: [] for k in KS}
    for rec in ranker.run(queries):
        ranked = [x["tool"] for x in rec.constrained]
        for k in KS:
            hits[k].append(hit_at(ranked, rec.query.tools, k))
    idx = bootstrap_indices(len(queries), resamples, 0)
    return {f"Rc@{k}": mean_ci(v, idx).to_dict() for k, v in hits.items()}


def density_curve(out: Path, catalog: Catalog, benches: Mapping[str, Sequence], settings: Mapping[str, Any]) -> dict:
    """``{subset: {"n_tools", "n_documented_distractors", setting: {bench: {Rc@5, Rc@50}}}}``,
    cached in ``out/density.json``. ``benches``: label -> queries; ``settings``: name -> BaselineConfig."""
    from toolsense.baselines.rankers import build_baseline

    path = out / "density.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    known = set(catalog.names)
    gold = {t for qs in benches.values() for q in qs for t in q.tools if t in known}
    result: dict[str, Any] = {}
    for name, sub in subsets(catalog, gold).items():
        row: dict[str, Any] = {"n_tools": len(sub), "n_documented_distractors": sum(documented(t) and t.name not in gold for t in sub)}
        for sname, cfg in settings.items():
            log.info("density %s (%d tools): %s", name, len(sub), sname)
            ranker = build_baseline(sub, cfg, 50)
            row[sname] = {b: score(ranker, qs) for b, qs in benches.items()}
        result[name] = row
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(result, indent=1) + "\n")
    return result


def run_density(out: Path, data_dir: str) -> dict:
    """The curve on ``catalog=toolbench`` for G1 and the released RRB part, default and ToolGen BM25."""
    from toolsense.baselines.config import BaselineConfig
    from toolsense.evaluation.benchmarks import load_benchmark
    from toolsense.catalog.config import load_from_config
    from toolsense.study.paper_tables import BENCHMARKS, benchmark_overrides, compose_evaluate

    cfg = compose_evaluate(["parametric=false", f"catalog.data_dir={data_dir}", "catalog=toolbench"]
                           + benchmark_overrides({b: BENCHMARKS[b] for b in ("G1", "rrb")}, data_dir))
    benches = {label: load_benchmark(bc, f"benchmarks.{label}").items for label, bc in cfg.benchmark_sections().items()}
    settings = {"bm25": BaselineConfig(), "bm25_toolgen": BaselineConfig(document="toolgen", tokenizer="words", scorer="okapi")}
    return density_curve(out, load_from_config(cfg.catalog), benches, settings)
