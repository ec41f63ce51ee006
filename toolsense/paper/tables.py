"""The paper's baseline rows beside ours, with the measured cause of each difference
(``docs/reference/paper_tables.md``), rebuilt by one command:

    python -m toolsense.paper                 # the BM25 settings (minutes)
    python -m toolsense.paper --dense         # and the dense ones (~40 min per document on a quiet core, once)
    python -m toolsense.paper --page-only     # rebuild the page from what is under --out

Each :class:`Setting` (a catalog and a baseline config) is one ``evaluate.py parametric=false``
run over ToolBench G1/G2/G3 and the released RRB part (read from ``$TOOLSENSE_DATA``, default
``../shared/data``), into ``<out>/<setting>/`` (a fixed folder:
a finished setting is skipped, an interrupted one resumes from its samples). Rankings keep the
top 100 (``decoding.beam_width=100``), ToolGen's BM25 window. The page is built from the
``results.json`` and ``samples.jsonl`` files alone (:mod:`toolsense.paper.page`), and
``density.json`` / ``dense_sample.json``. ``--dense`` first encodes the catalog gold-first in a
seeded random order (:mod:`toolsense.paper.dense`, resumable); until an encoding is
complete, the dense rows come from its sample. The command is :mod:`toolsense.paper`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

log = logging.getLogger(__name__)

WINDOW = 100
"""Tools ranked per query: ToolGen's BM25 keeps its top 100 (``indexer.search(..., top_n=100)``)."""


@dataclass(frozen=True)
class Setting:
    """One baseline configuration on one catalog: ``name`` is its output folder and table label."""

    name: str
    catalog: str
    """conf/catalog option."""
    baseline: str
    """conf/baseline option."""
    fields: Mapping[str, str] = field(default_factory=dict)
    """Overrides of that baseline section (``document``, ``tokenizer``, ``scorer``)."""
    what: str = ""
    """What it changes against the default, for the page."""
    dense: bool = False
    """Needs the catalog encoded (run only with --dense or when its embeddings are cached)."""
    benches: tuple[str, ...] = ()
    """The BENCHMARKS labels it runs on (empty: all); a catalog that holds only some benchmarks' gold tools
    (the 5,348-tool release catalog: the RRB's, not ToolBench's) runs on those alone."""

    def overrides(self) -> list[str]:
        sec = f"baselines.{self.name}"
        return ([f"catalog={self.catalog}", f"+baseline@{sec}={self.baseline}", f"{sec}.label={self.name}"]
                + [f"{sec}.{k}={v}" for k, v in self.fields.items()])


SETTINGS: tuple[Setting, ...] = (
    Setting("bm25", "toolbench", "bm25", {},
            "our default: `tool_text` document, bm25s tokenizer (English stopwords out), bm25s (Lucene) BM25"),
    Setting("bm25_doc_toolgen", "toolbench", "bm25", {"document": "toolgen"},
            "document: ToolGen's corpus text (category, names, API description, parameter JSON)"),
    Setting("bm25_doc_api_text", "toolbench", "bm25", {"document": "api_text"}, "document: API title + API description only"),
    Setting("bm25_doc_names", "toolbench", "bm25", {"document": "names"}, "document: service and API names only"),
    Setting("bm25_words", "toolbench", "bm25", {"tokenizer": "words"},
            "tokenizer: lower-cased words + punctuation, no stopwords (ToolGen's)"),
    Setting("bm25_okapi", "toolbench", "bm25", {"scorer": "okapi"}, "scorer: rank_bm25's BM25Okapi (ToolGen's)"),
    Setting("bm25_toolgen", "toolbench", "bm25_toolgen", {}, "all three as ToolGen: ToolGen document + words + Okapi"),
    Setting("bm25_clean", "toolbench_clean", "bm25", {}, "catalog: no text from the ToolBench test query files"),
    Setting("bm25_toolgen_clean", "toolbench_clean", "bm25_toolgen", {}, "ToolGen's BM25 on the clean catalog"),
    Setting("bm25_release", "toolsense_release", "bm25", {}, "catalog: the 5,348-tool ToolSense release catalog "
            "(every tool of the released benchmarks) instead of ToolBench's 46,984", benches=("rrb",)),
    Setting("bm25_toolgen_release", "toolsense_release", "bm25_toolgen", {}, "ToolGen's BM25 on the release catalog",
            benches=("rrb",)),
    Setting("dense", "toolbench", "dense", {}, "MiniLM (all-MiniLM-L6-v2) over `tool_text` (the paper's te3l needs an API key)",
            dense=True),
    Setting("dense_toolgen", "toolbench", "dense_toolgen", {}, "MiniLM over ToolGen's document", dense=True),
)

BENCHMARKS: dict[str, str] = {"G1": "toolbench_g1", "G2": "toolbench_g2", "G3": "toolbench_g3", "rrb": "rrb"}
"""Benchmark label -> conf/benchmark option; ``rrb`` reads the released part (``released/rrb_dev.jsonl``)."""


def benchmark_overrides(benchmarks: Mapping[str, str], data_dir: str) -> list[str]:
    out = [f"+benchmark@benchmarks.{label}={opt}" for label, opt in benchmarks.items()]
    for label, opt in benchmarks.items():
        if opt == "rrb":
            out.append(f"benchmarks.{label}.path={data_dir}/released/rrb_dev.jsonl")
    return out


def setting_benchmarks(setting: Setting, benchmarks: Mapping[str, str]) -> dict[str, str]:
    """The benchmarks ``setting`` runs on: ``setting.benches`` of ``benchmarks`` (all when it names none)."""
    unknown = [b for b in setting.benches if b not in benchmarks]
    if unknown:
        raise ValueError(f"setting {setting.name}: benches {unknown} are not benchmarks here ({list(benchmarks)})")
    return {b: o for b, o in benchmarks.items() if not setting.benches or b in setting.benches}


def toolgen_ndcg(ranked: Sequence[Mapping], gold: Sequence[str], k: int, window: int = WINDOW) -> float:
    """NDCG@k as ToolGen computes it (``compute_ndcg`` in its eval_bm25.py / eval_encoder.py,
    sklearn's ``ndcg_score`` over the whole corpus), for comparison with its numbers only —
    :func:`toolsense.metrics.ranking.ndcg_at` is the correct one.

    ToolGen marks a tool relevant only if it is gold *and* in the top ``window`` retrieved, so
    the ideal DCG counts only the gold tools that were found: one of three gold tools at rank 1
    scores 1.0 (correct NDCG: 0.47), and a query whose gold is all outside the window scores 0.
    Tools with equal scores share their gains (sklearn's tie averaging), within the window.
    ``ranked``: ``[{"tool", "score"}, ...]`` best first, as in samples.jsonl."""
    gold_set = set(gold)
    top = list(ranked[:window])
    gains = [1.0 if r["tool"] in gold_set else 0.0 for r in top]
    n_rel = int(sum(gains))
    if n_rel == 0:
        return 0.0
    disc = [1.0 / math.log2(i + 2) for i in range(len(top))]
    dcg, start = 0.0, 0
    while start < min(k, len(top)):
        end = start + 1
        while end < len(top) and top[end]["score"] == top[start]["score"]:
            end += 1
        dcg += sum(gains[start:end]) / (end - start) * sum(disc[start:min(end, k)])
        start = end
    return dcg / sum(disc[: min(k, n_rel)])


def run_setting(setting: Setting, out: Path, benchmarks: Mapping[str, str], data_dir: str,
                extra: Sequence[str] = ()) -> Path:
    """``evaluate.py`` for one setting into ``out/<name>`` (skipped when its results.json exists:
    the runner writes it last). ``extra``: further evaluate.py overrides (tests: a small catalog)."""
    from toolsense.evaluation.config import compose_evaluate
    from toolsense.evaluation.runner import run

    target = out / setting.name
    if (target / "results.json").is_file():
        log.info("%s: done (%s), skipped", setting.name, target / "results.json")
        return target
    ovr = (["parametric=false", f"output_dir={target}", f"decoding.beam_width={WINDOW}", f"catalog.data_dir={data_dir}"]
           + setting.overrides() + benchmark_overrides(setting_benchmarks(setting, benchmarks), data_dir) + list(extra))
    log.info("%s: evaluate.py %s", setting.name, " ".join(ovr))
    run(compose_evaluate(ovr))
    return target
