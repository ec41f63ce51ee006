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
import math
import random
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from toolsense.catalog import Catalog
from toolsense.metrics.intervals import Estimate, bootstrap_indices, mean_ci
from toolsense.metrics.ranking import hit_at
from toolsense.metrics.registry import METRICS
from toolsense.paper.format import RC
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
    return {METRICS.key("Rc", k): mean_ci(v, idx).to_dict() for k, v in hits.items()}


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
    from toolsense.catalog.config import load_from_config
    from toolsense.evaluation.benchmarks import load_benchmarks
    from toolsense.evaluation.config import compose_evaluate
    from toolsense.paper.tables import BENCHMARKS, benchmark_overrides

    cfg = compose_evaluate(["parametric=false", f"catalog.data_dir={data_dir}", "catalog=toolbench"]
                           + benchmark_overrides({b: BENCHMARKS[b] for b in ("G1", "rrb")}, data_dir))
    benches = {label: b.items for label, b in load_benchmarks(cfg.benchmark, cfg.benchmarks).items()}
    settings = {"bm25": BaselineConfig(), "bm25_toolgen": BaselineConfig(document="toolgen", tokenizer="words", scorer="okapi")}
    return density_curve(out, load_from_config(cfg.catalog), benches, settings)


def density_section(curve: Optional[dict]) -> str:
    """The catalog-density table and the Rc@50 it extrapolates to a catalog whose
    46,984 tools are all documented, one log2 step per halving of the documented distractors."""
    from toolsense.paper.format import BENCH_TITLES, pct
    from toolsense.reporting.tables import markdown_table

    if not curve:
        return "Not computed yet (`python -m toolsense.paper` computes it).\n"
    names = [n for n in ("all", "documented", "documented_half", "documented_quarter") if n in curve]
    cols = [(s, b) for s in ("bm25", "bm25_toolgen") for b in ("G1", "rrb")]
    rows = [[f"`{n}`", f"{curve[n]['n_tools']:,}", f"{curve[n]['n_documented_distractors']:,}",
             *(pct(Estimate(**curve[n][s][b][RC[50]])) for s, b in cols)] for n in names]
    table = markdown_table(["catalog", "tools", "documented distractors",
                            *(f"`{s}` {BENCH_TITLES[b].split(' (')[0]} Rc@50" for s, b in cols)], rows)
    lines = []
    if {"documented", "documented_half"} <= set(curve):
        steps = math.log2(46984 / max(curve["documented"]["n_tools"], 1))
        for s, b in cols:
            _, v, x = extrapolated(curve, s, b)
            h = curve["documented_half"][s][b][RC[50]]["value"]
            lines.append(f"- `{s}` {BENCH_TITLES[b]}: {100 * h:.1f} → {100 * v:.1f} when the documented distractors double; "
                         f"{steps:.2f} more doublings (to 46,984 documented tools) → about {100 * x:.1f}.")
    return table + "\n" + "\n".join(lines) + "\n"


def extrapolated(curve: dict, setting: str, bench: str) -> tuple[float, float, float]:
    """(Rc@50 on ``all``, on ``documented``, extrapolated to 46,984 documented tools), fractions."""
    full, half = curve["documented"][setting][bench][RC[50]]["value"], curve["documented_half"][setting][bench][RC[50]]["value"]
    steps = math.log2(46984 / max(curve["documented"]["n_tools"], 1))
    return curve["all"][setting][bench][RC[50]]["value"], full, full - steps * (half - full)


def documentation(curve: Optional[dict]) -> str:
    """The density curve's reading in one sentence per benchmark (ToolGen's BM25)."""
    from toolsense.paper.format import BENCH_TITLES

    if not curve or not {"all", "documented", "documented_half"} <= set(curve):
        return "not computed yet."
    out, above = [], []
    for bench, paper in (("G1", 27.8), ("rrb", 32.4)):
        a, d, x = extrapolated(curve, "bm25_toolgen", bench)
        above.append(x > paper / 100)
        out.append(f"{BENCH_TITLES[bench]}: leaving the undocumented tools out moves ToolGen's BM25 Rc@50 from "
                   f"{100 * a:.1f} to {100 * d:.1f} ({'up: they are hard distractors, not absent ones' if d > a else 'down'}); "
                   f"extrapolated to 46,984 documented tools, about {100 * x:.1f} "
                   f"({'above' if above[-1] else 'at or below'} the paper's {paper})")
    verdict = " Documentation of the catalog does not bring Rc@50 to the paper's numbers." if all(above) else ""
    return "; ".join(out) + "." + verdict
