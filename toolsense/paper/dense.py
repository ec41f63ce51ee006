"""The dense (MiniLM) rows of ``docs/reference/paper_tables.md`` on a shared CPU.

Encoding ``catalog=toolbench``'s 46,984 tools with MiniLM takes about 40 min on a quiet core and
hours on a loaded one. ``encode`` encodes them with :mod:`toolsense.models.encoders.progressive`:
the gold tools of G1/G2/G3 and the released RRB part first, then the others in a seeded random
order, one chunk at a time (resumable). ``sample`` ranks with what is encoded so far: the gold
tools plus a uniform random sample of the other tools, the same for every query, with BM25
(ours and ToolGen's) on the *same* sample catalog beside it, so that how far the sample's size
moves a number is measured on BM25, whose full-catalog value is known. When an encoding is
complete it is the ordinary embedding cache entry and ``paper_tables --dense`` evaluates the
full catalog with ``baseline=dense`` / ``dense_toolgen`` (instantly).

    python -m toolsense.paper.dense encode tool_text toolgen   # long; resumable; progress in the log
    python -m toolsense.paper.dense sample                     # <out>/dense_sample.json (minutes)
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from toolsense.paper.format import RC

log = logging.getLogger(__name__)

DOCUMENTS = {"dense": "tool_text", "dense_toolgen": "toolgen"}
"""Dense setting (paper_tables) -> the document it encodes."""
ENCODE_CHUNK = 1024
ENCODE_BATCH = 32
"""Texts per forward pass inside a chunk (length-sorted within the chunk: small batches pad little)."""


def paper_context(data_dir: str) -> tuple[Any, dict[str, list]]:
    """``catalog=toolbench`` and the queries of G1/G2/G3 and the released RRB part."""
    from toolsense.catalog.config import load_from_config
    from toolsense.evaluation.benchmarks import load_benchmarks
    from toolsense.evaluation.config import compose_evaluate
    from toolsense.paper.tables import BENCHMARKS, benchmark_overrides

    cfg = compose_evaluate(["parametric=false", f"catalog.data_dir={data_dir}", "catalog=toolbench"]
                           + benchmark_overrides(BENCHMARKS, data_dir))
    benches = {label: list(b.items) for label, b in load_benchmarks(cfg.benchmark, cfg.benchmarks).items()}
    return load_from_config(cfg.catalog), benches


def gold_tools(catalog, benches: Mapping[str, Sequence]) -> set[str]:
    known = set(catalog.names)
    return {t for qs in benches.values() for q in qs for t in q.tools if t in known}


def encoder():
    from toolsense.models.encoders import SentenceEncoder

    return SentenceEncoder(None, "torch", ENCODE_BATCH)


def encode(data_dir: str, templates: Sequence[str]) -> None:
    from toolsense.models.encoders.progressive import encode_progressively

    catalog, benches = paper_context(data_dir)
    gold = gold_tools(catalog, benches)
    log.info("%d tools, %d gold tools first; documents %s", len(catalog), len(gold), ", ".join(templates))
    for tpl in templates:
        encode_progressively(catalog, encoder(), tpl, gold, chunk=ENCODE_CHUNK)


METRICS = (RC[1], RC[5], RC[50], "ToolGen NDCG@5")


def per_query(ranker, queries: Sequence, window: int) -> dict[str, list[float]]:
    """Per-query Rc@1/5/50 (a gold tool in the top k) and ToolGen's NDCG@5 (its ``window``)."""
    from toolsense.metrics.ranking import hit_at
    from toolsense.paper.tables import toolgen_ndcg

    out: dict[str, list[float]] = {m: [] for m in METRICS}
    for rec in ranker.run(queries):
        ranked = [x["tool"] for x in rec.constrained]
        for k in (1, 5, 50):
            out[RC[k]].append(hit_at(ranked, rec.query.tools, k))
        out["ToolGen NDCG@5"].append(toolgen_ndcg(rec.constrained, rec.query.tools, 5, window))
    return out


def query_embedder(benches: Mapping[str, Sequence]):
    """``texts -> [n, d]`` unit MiniLM embeddings of the benchmarks' queries, each encoded once."""
    from toolsense.baselines.rankers import _unit

    texts = sorted({q.text for qs in benches.values() for q in qs})
    table = dict(zip(texts, _unit(encoder().encode(texts))))
    return lambda batch: np.stack([table[t] for t in batch])


def dense_ranker(sub, names: list[str], emb: np.ndarray, top: int, embed_queries):
    """Cosine ranking of ``sub``'s tools (rows of ``emb`` in ``names`` order)."""
    from toolsense.baselines.rankers import Ranker

    pos = {n: i for i, n in enumerate(names)}
    tool_emb = np.ascontiguousarray(emb[[pos[n] for n in sub.names]])
    return Ranker(sub, top, 64, lambda texts: embed_queries(list(texts)) @ tool_emb.T)


CURVE_BENCHES = ("G1", "rrb")


def size_curve(catalog, benches: Mapping[str, Sequence], names: list[str], emb: np.ndarray, n_gold: int,
               embed_queries) -> list[dict[str, Any]]:
    """Rc@50 of dense and ``bm25`` on G1 and the RRB part with a quarter and a half of the sample's
    non-gold tools (nested prefixes of the encoding order: uniform samples too)."""
    from toolsense.baselines.config import BaselineConfig
    from toolsense.baselines.rankers import build_baseline

    n_d, out = len(names) - n_gold, []
    for div in (4, 2):
        prefix = names[: n_gold + n_d // div]
        sub = catalog.subset(prefix)
        row: dict[str, Any] = {"n_distractors": n_d // div}
        for s, ranker in (("dense", dense_ranker(sub, prefix, emb[: len(prefix)], 50, embed_queries)),
                          ("bm25", build_baseline(sub, BaselineConfig(), 50))):
            log.info("size curve: %s with %d non-gold tools", s, n_d // div)
            row[s] = {b: float(np.mean(per_query(ranker, benches[b], 5)[RC[50]])) for b in CURVE_BENCHES}
        out.append(row)
    return out


def extrapolate(points: Sequence[tuple[int, float]], n_full: int) -> float:
    """Log-linear in the number of non-gold tools: the last point minus, per further doubling to
    ``n_full``, the change of the last doubling (``points``: (n, value), ascending n)."""
    (n_half, v_half), (n, v) = points[-2], points[-1]
    return v - math.log2(n_full / n) * (v_half - v) / math.log2(n / n_half)


def sample_cells(catalog, benches: Mapping[str, Sequence], names: list[str], emb: np.ndarray, gold: set[str],
                 document: str) -> dict[str, Any]:
    """Dense over the encoded sample, and ours / ToolGen's BM25 over the same sample catalog:
    per benchmark and system, per-query values (item ids alongside, for paired differences)."""
    from toolsense.baselines.config import BaselineConfig
    from toolsense.baselines.rankers import build_baseline
    from toolsense.paper.format import DENSE_WINDOW
    from toolsense.paper.tables import WINDOW

    sub = catalog.subset(names)
    embed_queries = query_embedder(benches)
    systems = {"dense": (dense_ranker(sub, names, emb, WINDOW, embed_queries), DENSE_WINDOW),
               "bm25": (build_baseline(sub, BaselineConfig(), WINDOW), WINDOW),
               "bm25_toolgen": (build_baseline(sub, BaselineConfig(document="toolgen", tokenizer="words", scorer="okapi"), WINDOW), WINDOW)}
    cells: dict[str, Any] = {}
    for b, qs in benches.items():
        cells[b] = {"ids": [q.query_id for q in qs], "tiers": [str(q.meta.get("tier")) for q in qs]}
        for s, (ranker, window) in systems.items():
            log.info("sample %s (%d tools): %s on %s", document, len(sub), s, b)
            cells[b][s] = per_query(ranker, qs, window)
    n_gold = len(gold & set(sub.names))
    curve = size_curve(catalog, benches, names, emb, n_gold, embed_queries) if all(b in benches for b in CURVE_BENCHES) else []
    return {"document": document, "n_tools": len(sub), "n_catalog": len(catalog), "n_gold": len(gold),
            "n_distractors": len(sub) - n_gold, "cells": cells, "curve": curve}


def run_sample(out: Path, data_dir: str) -> Path:
    """``<out>/dense_sample.json``: for each dense setting whose encoding has begun, its sample's cells."""
    from toolsense.models.encoders.progressive import encoded_so_far
    from toolsense.utils.paths import atomic_write_text

    catalog, benches = paper_context(data_dir)
    gold = gold_tools(catalog, benches)
    result, before = {}, load_sample(out)
    for setting, document in DOCUMENTS.items():
        names, emb = encoded_so_far(catalog, encoder(), document)
        if not gold <= set(names):
            log.info("%s: %d of %d tools encoded, not yet every gold tool: no sample", setting, len(names), len(catalog))
            continue
        if before.get(setting, {}).get("n_tools") == len(names):
            log.info("%s: sample of %d tools unchanged since %s, kept", setting, len(names), out / "dense_sample.json")
            result[setting] = before[setting]
            continue
        result[setting] = sample_cells(catalog, benches, names, emb, gold, document)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "dense_sample.json"
    atomic_write_text(path, json.dumps(result) + "\n")
    return path


SAMPLE_INTRO = """\
The paper's dense baseline is te3l (OpenAI text-embedding-3-large): it needs an API key, and none is
available where this page was built, so te3l is not run (`baseline=openai` runs it where `OPENAI_API_KEY`
is set). Ours is the embedded MiniLM (all-MiniLM-L6-v2), over our default document (`dense`) and over
ToolGen's (`dense_toolgen`). Where the whole catalog is not encoded yet (hours on a shared core), the
dense rows come from what is: every gold tool of G1/G2/G3 and the RRB part, plus a *uniform random
sample* of the other tools (seeded; `python -m toolsense.paper.dense encode` encodes in that
order, `... paper_dense sample` ranks). A smaller catalog is an easier one: BM25 on the same sample,
beside its full-catalog value, measures how far the sample's size moves a number; a dense number on
the sample is an upper estimate of the full catalog's, not a measurement of it.

"""

FULL_INTRO = SAMPLE_INTRO[: SAMPLE_INTRO.index(" Where the whole")] + """ The whole catalog is
encoded: every dense row below is measured over all of its tools (every gold tool of G1/G2/G3 and the
RRB part and every other tool), not a sample, and needs no extrapolation.

"""


def is_full(sample: Mapping[str, Any]) -> bool:
    """Whether every encoding in ``sample`` holds every tool of the catalog (the "sample" is the catalog)."""
    return bool(sample) and all(s["n_distractors"] >= s["n_catalog"] - s["n_gold"] for s in sample.values())


def intro(sample: Mapping[str, Any]) -> str:
    """The dense section's opening: a sample's caveats, or (the whole catalog encoded) that it is measured."""
    return FULL_INTRO if is_full(sample) else SAMPLE_INTRO


def load_sample(out: Path) -> dict[str, Any]:
    path = out / "dense_sample.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def sample_est(sample: Mapping[str, Any], setting: str, bench: str, system: str, metric: str, minus: str | None = None):
    """Mean (or the paired difference ``system - minus`` over the same queries) with its 95%
    bootstrap interval, or None when that cell is absent."""
    from toolsense.metrics.intervals import bootstrap_indices, mean_ci

    cell = sample.get(setting, {}).get("cells", {}).get(bench)
    if not cell or system not in cell:
        return None
    v = np.asarray(cell[system][metric], dtype=np.float64)
    if minus is not None:
        v = v - np.asarray(cell[minus][metric], dtype=np.float64)
    return mean_ci(v, bootstrap_indices(len(v), 1000, 0))


def curve_points(sample: Mapping[str, Any], setting: str, system: str, bench: str) -> list[tuple[int, float]]:
    """(non-gold tools, Rc@50) of ``system`` on ``bench``: the size curve's prefixes, then the whole sample."""
    s = sample[setting]
    pts = [(r["n_distractors"], r[system][bench]) for r in s.get("curve", [])]
    return pts + [(s["n_distractors"], float(np.mean(s["cells"][bench][system][RC[50]])))]


def extrapolated_rc50(sample: Mapping[str, Any], setting: str, system: str, bench: str) -> float | None:
    """Rc@50 extrapolated log-linearly to every non-gold tool of the catalog, or None without a curve."""
    s = sample.get(setting)
    if not s or len(s.get("curve", [])) < 2 or bench not in s["cells"]:
        return None
    return extrapolate(curve_points(sample, setting, system, bench), s["n_catalog"] - s["n_gold"])


def curve_table(sample: Mapping[str, Any], setting: str, full_bm25: Mapping[tuple[str, str], Any]) -> str:
    """Rc@50 against the number of non-gold tools, extrapolated to the whole catalog; for ``bm25``
    the measured full-catalog value beside its extrapolation checks the extrapolation."""
    from toolsense.reporting.tables import markdown_table

    s = sample[setting]
    cols = [(sys_, b) for sys_ in ("dense", "bm25") for b in CURVE_BENCHES]
    pts = {c: curve_points(sample, setting, *c) for c in cols}
    rows = [[f"{n:,}", *(f"{100 * pts[c][i][1]:.1f}" for c in cols)] for i, (n, _) in enumerate(pts[cols[0]])]
    n_full = s["n_catalog"] - s["n_gold"]
    if is_full(sample):  # the last point is the whole catalog: measured, nothing to extrapolate
        rows[-1][0] = f"{n_full:,} (measured: the full catalog)"
        return markdown_table(["non-gold tools", "dense G1 Rc@50", "dense RRB part Rc@50", "`bm25` G1 Rc@50",
                               "`bm25` RRB part Rc@50"], rows)
    rows.append([f"{n_full:,} (extrapolated)", *(f"{100 * extrapolate(pts[c], n_full):.1f}" for c in cols)])
    full = [full_bm25.get(("bm25", b)) for b in CURVE_BENCHES]
    rows.append([f"{n_full:,} (measured: the full catalog)", "not encoded", "not encoded",
                 *(f"{100 * e.value:.1f}" if e is not None else "—" for e in full)])
    return markdown_table(["non-gold tools", "dense G1 Rc@50", "dense RRB part Rc@50", "`bm25` G1 Rc@50",
                           "`bm25` RRB part Rc@50"], rows)


def sample_label(sample: Mapping[str, Any], setting: str) -> str:
    s = sample[setting]
    if is_full(sample):
        return f"the full catalog: all {s['n_catalog']:,} tools ({s['n_gold']:,} gold tools + {s['n_distractors']:,} others)"
    return (f"every gold tool ({s['n_gold']:,}) + a uniform sample of {s['n_distractors']:,} of the "
            f"{s['n_catalog'] - s['n_gold']:,} others ({sample_share(s):.0f}%): {s['n_tools']:,} of {s['n_catalog']:,} tools")


def sample_share(s: Mapping[str, Any]) -> float:
    """Percent of the non-gold tools in the sample."""
    return 100 * s["n_distractors"] / max(s["n_catalog"] - s["n_gold"], 1)


def sample_section(sample: Mapping[str, Any], full_bm25: Mapping[tuple[str, str], Any]) -> str:
    """The page's section on the dense sample. ``full_bm25``: (setting, bench) -> full-catalog
    Rc@50 Estimate of ``bm25`` / ``bm25_toolgen`` (from the evaluate.py runs)."""
    from toolsense.paper.format import BENCH_TITLES, pct, signed
    from toolsense.reporting.tables import markdown_table

    if not sample:
        return "No encoding has reached every gold tool yet (`python -m toolsense.paper.dense encode tool_text toolgen`).\n"
    parts = []
    for setting in (s for s in DOCUMENTS if s in sample):
        rows = []
        for b in sample[setting]["cells"]:
            full = [full_bm25.get((s, b)) for s in ("bm25", "bm25_toolgen")]
            rows.append([BENCH_TITLES.get(b, b), pct(sample_est(sample, setting, b, "dense", RC[50])),
                         pct(sample_est(sample, setting, b, "dense", RC[5])),
                         pct(sample_est(sample, setting, b, "dense", "ToolGen NDCG@5")),
                         pct(sample_est(sample, setting, b, "bm25", RC[50])) + f" (full: {pct(full[0])})",
                         pct(sample_est(sample, setting, b, "bm25_toolgen", RC[50])) + f" (full: {pct(full[1])})",
                         signed(sample_est(sample, setting, b, "dense", RC[50], minus="bm25"))])
        same = "catalog" if is_full(sample) else "sample"
        parts.append(f"`{setting}` (MiniLM over `{sample[setting]['document']}`), on {sample_label(sample, setting)}:\n\n"
                     + markdown_table(["benchmark", f"dense {RC[50]}", f"dense {RC[5]}", "dense ToolGen NDCG@5",
                                       f"`bm25` {RC[50]}, same {same}", f"`bm25_toolgen` {RC[50]}, same {same}",
                                       f"dense − `bm25` {RC[50]} (paired)"], rows))
        if len(sample[setting].get("curve", [])) >= 2:
            parts.append(("How the catalog's size moves Rc@50 (a quarter, a half and all of its non-gold tools, nested; "
                          "the last row is the full catalog, measured):\n\n" if is_full(sample) else
                          "How the sample's size moves Rc@50 (a quarter, a half and all of its non-gold tools, "
                          "nested), and the log-linear extrapolation to the whole catalog:\n\n")
                         + curve_table(sample, setting, full_bm25))
    return "\n".join(parts) + "\n" + dense_reasons(sample, full_bm25)


def dense_reasons(sample: Mapping[str, Any], full_bm25: Mapping[tuple[str, str], Any]) -> str:
    """Why our dense rows differ from the paper's te3l 47.0 / 55.6, each cause with its measured size."""
    setting = next((s for s in DOCUMENTS if s in sample), None)
    if setting is None:
        return ""
    lines = ["Why the dense rows differ from the paper's te3l (G1 47.0, RRB part 55.6), cause by cause:\n"]
    for b, paper in (("G1", 47.0), ("rrb", 55.6)):
        rc, nd = (sample_est(sample, setting, b, "dense", m) for m in (RC[50], "ToolGen NDCG@5"))
        x, xb = extrapolated_rc50(sample, setting, "dense", b), extrapolated_rc50(sample, setting, "bm25", b)
        full = full_bm25.get(("bm25", b))
        size = (f"catalog size: measured on the full catalog (Rc@50 {100 * rc.value:.1f}; no extrapolation)" if is_full(sample) else
                f"catalog size: the sample's Rc@50 {100 * rc.value:.1f} extrapolates to ≈ {100 * x:.1f} on the whole catalog "
                f"(the same extrapolation gives `bm25` {100 * xb:.1f} against its measured {100 * full.value:.1f}, "
                f"an error of {100 * (xb - full.value):+.1f})" if x is not None and xb is not None and full is not None
                else f"catalog size: the sample's Rc@50 is {100 * rc.value:.1f}, an upper estimate (no size curve yet)")
        lines.append(f"- {b if b == 'G1' else 'RRB part'} (paper {paper}): {size}; metric: ToolGen's NDCG@5 (its top-5 window) "
                     f"of the same rankings is {100 * nd.value:.1f}, {100 * (nd.value - rc.value):+.1f} from Rc@50 on the "
                     f"{'full catalog' if is_full(sample) else 'sample'}.")
    lines.append("- Not measurable here: te3l itself (no API key; MiniLM is a smaller, older encoder), and ToolBench's own "
                 "G1 test split (ours is StableToolBench's 474 solvable queries).\n")
    return "\n".join(lines)


def sample_direction(sample: Mapping[str, Any], setting: str, system: str = "dense", metric: str = RC[50]) -> str:
    g1, rrb = (sample_est(sample, setting, b, system, metric) for b in ("G1", "rrb"))
    if g1 is None or rrb is None:
        return f"`{setting}` ({system}): not run"
    d = rrb.value - g1.value
    return f"{metric}: G1 {100 * g1.value:.1f} → RRB part {100 * rrb.value:.1f} ({100 * d:+.1f}: {'rises' if d > 0 else 'falls'})"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolsense.paper.dense", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    enc = sub.add_parser("encode", help="encode the catalog (gold first, then a seeded random order), resumable")
    enc.add_argument("documents", nargs="+", choices=sorted(set(DOCUMENTS.values())))
    smp = sub.add_parser("sample", help="rank with what is encoded so far; write <out>/dense_sample.json")
    smp.add_argument("--out", default="outputs/paper_tables")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    data_dir = os.environ.get("TOOLSENSE_DATA", "../shared/data")
    if not Path(data_dir).is_dir():
        raise SystemExit(f"the shared data folder {data_dir} does not exist (TOOLSENSE_DATA, default ../shared/data)")
    if args.cmd == "encode":
        encode(data_dir, args.documents)
    else:
        path = run_sample(Path(args.out), data_dir)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
