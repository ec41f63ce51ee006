"""``evaluate.py``'s job: load the model (a run directory, or an untrained base model), run
every configured benchmark — parametric retrieval (constrained + free-form), MCQ/QA probes in
each mode, and the baselines on the same retrieval benchmarks — and write one table.

Layout under ``output_dir``::

    <benchmark>/<system>/samples.jsonl, results.json   one per evaluation, resumable
    <benchmark>/<system>/samples.fingerprint.json      what produced them (resume only on a match)
    results.json                                        all of them + the resolved config
    table.md                                            the combined table (also printed)
    report.html                                         the static page
    manifest.json                                       the three above, published as one set (utils/publish.py)
    .lock                                               held by the evaluating process (one per folder)
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any, Mapping

from omegaconf import DictConfig

from toolsense.baselines.config import BaselineConfig
from toolsense.baselines.rankers import build_baseline
from toolsense.catalog.config import catalog_beside_run, load_from_config
from toolsense.decoding.config import DecodingConfig
from toolsense.decoding.length import fit_queries
from toolsense.decoding.retrieval import Retriever
from toolsense.evaluation.benchmarks import Benchmark, load_benchmarks
from toolsense.evaluation.config import EvaluateConfig, MetricsConfig, ProbeConfig, Task, catalog_section
from toolsense.evaluation.context import EvalModel, load_run, load_untrained, portable_source
from toolsense.evaluation.coverage import Stage2Tools, stage2_tools
from toolsense.evaluation.distributed import Shard, init_shard
from toolsense.evaluation.fingerprint import benchmark_identity, catalog_identity, claim, decoding_identity, model_identity
from toolsense.evaluation.outputs import json_text, publish_result
from toolsense.evaluation.probes import check_probe_lengths, evaluate_probe
from toolsense.evaluation.systems import SystemConfig, build_system, system_decoding, system_model_identity
from toolsense.evaluation.tasks import evaluate_ranking
from toolsense.metrics.aggregate import warn_trivial
from toolsense.reporting.html_report import html_report_text
from toolsense.reporting.sample_table import log_evaluation
from toolsense.reporting.tables import results_table
from toolsense.tracking import eval_metrics, evaluation_tracker, namespaced
from toolsense.utils.config import as_plain, to_config
from toolsense.utils.io import code_state, git_sha
from toolsense.utils.publish import publish
from toolsense.utils.rundir import holding

log = logging.getLogger(__name__)


def load_model_under_test(cfg: EvaluateConfig) -> EvalModel:
    if cfg.run:
        return load_run(cfg.run, cfg.stage or "stage2", cfg.device, cfg.dtype, cfg.model.attn_implementation, cfg.checkpoint)
    return load_untrained(cfg.model, catalog_section(cfg.catalog, None), cfg.index, cfg.prompts, cfg.device)


def system_name(ev: EvalModel) -> str:
    step = ev.source.get("checkpoint")
    return f"{ev.source['model']}:{ev.source['stage']}" + (f"@{step}" if step is not None else "")


def ranked_catalog(cfg: EvaluateConfig, ev: EvalModel | None):
    """The catalog baselines and systems rank: beside a trained run its own, or ``catalog=`` holding exactly its
    tools (context.py); else the one configured (the model's, untrained)."""
    if ev is not None and ev.source.get("run") is not None:
        return catalog_beside_run(catalog_section(cfg.catalog, cfg.run), ev.source["run"], ev.catalog, ev.index.paths)
    return ev.catalog if ev is not None else load_from_config(catalog_section(cfg.catalog, cfg.run))


def _plan(out: Path, benches: Mapping[str, Benchmark], ev: EvalModel | None, catalog, baselines_cfg: Mapping[str, BaselineConfig],
          dec: DecodingConfig, metrics: MetricsConfig, probe: ProbeConfig,
          systems_cfg: Mapping[str, SystemConfig] | None = None) -> dict[Path, dict[str, Any]]:
    """Every evaluation folder this run writes, with its fingerprint (fingerprint.py). A system
    (systems.py) is fingerprinted by its own settings, the model it re-ranks with, the decoding
    and the catalog its baseline ranks."""
    plan: dict[Path, dict[str, Any]] = {}
    systems_cfg = systems_cfg or {}
    model = model_identity(ev) if ev is not None else None
    baseline_catalog = catalog_identity(catalog) if baselines_cfg or systems_cfg else None
    probe_fp = {k: v for k, v in dataclasses.asdict(probe).items() if k not in ("batch_size", "modes")}
    for label, bench in benches.items():
        b = benchmark_identity(bench)
        if bench.kind == "retrieval":
            if model is not None:
                plan[out / label / "model"] = {"evaluation": "retrieval", "system": model, "benchmark": b,
                                               "decoding": decoding_identity(dec, metrics.ks, ev)}
            for bl_label, bc in baselines_cfg.items():
                plan[out / label / bl_label] = {
                    "evaluation": "retrieval", "benchmark": b, "decoding": {"top": dec.beam_width, "ks": metrics.ks},
                    "system": {"baseline": bc.identity(), "catalog_sha256": baseline_catalog}}
            for s_label, sc in systems_cfg.items():
                plan[out / label / s_label] = {
                    "evaluation": "retrieval", "benchmark": b, "decoding": decoding_identity(system_decoding(dec, sc), metrics.ks, ev),
                    "system": {"system": sc.identity(), "model": system_model_identity(ev, sc), "catalog_sha256": baseline_catalog}}
        elif model is not None:
            for mode in probe.modes:
                plan[out / label / mode] = {"evaluation": bench.kind, "system": model, "benchmark": b, "mode": mode,
                                            "probe": probe_fp}
    return plan


def evaluate(cfg: EvaluateConfig, output_dir: str | Path, shard: Shard = Shard()) -> list[dict]:
    """Run every benchmark × system of ``cfg``; returns the
    per-evaluation results (each also written to its own results.json; a trained run's rows carry
    its Stage-2 coverage, coverage.py). Every evaluation folder
    is claimed first (fingerprint.py): resumed on an exact match, else refused unless
    ``overwrite``. Under torchrun the parametric retrieval is shared out between the processes;
    baselines and probes run on rank 0, which alone returns results (distributed.py)."""
    out = Path(output_dir)
    dec, metrics, probe = cfg.decoding, cfg.metrics, cfg.probe
    where = "benchmarks.{}" if cfg.benchmarks else "benchmark"
    benches = load_benchmarks(cfg.benchmark, cfg.benchmarks)
    baselines_cfg, systems_cfg = cfg.baseline_sections(), cfg.system_sections()
    ev = load_model_under_test(cfg) if cfg.parametric else None
    catalog = ranked_catalog(cfg, ev)
    plan: dict[Path, dict[str, Any]] = {}
    retriever = Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts, dec) if ev is not None else None
    fits = {label: fit_queries(retriever, b.items, cfg.query_length, f"{where.format(label)} ({b.path})")  # before any search
            for label, b in benches.items() if retriever is not None and b.kind == "retrieval"}
    for b in (b for b in benches.values() if ev is not None and b.kind != "retrieval"):  # probes past the context: refused
        check_probe_lengths(ev, b, probe.modes, probe, f"{where.format(b.name)} ({b.path})")

    def _claim() -> None:  # rank 0 only: hashing the checkpoint once is enough
        plan.update(_plan(out, benches, ev, catalog, baselines_cfg, dec, metrics, probe, systems_cfg))
        plan.update({d: {**plan[d], "query_length": q} for label, (_, rep) in fits.items()
                     if (q := cfg.query_length.identity(rep)) and (d := out / label / "model") in plan})
        claim(list(plan.items()), cfg.overwrite, shard.world)

    shard.on_main(_claim)
    provenance: dict[str, Any] = {"config": as_plain(cfg)}
    if ev is not None:
        provenance.update(index_sha256=ev.index_sha256, source=ev.source)
    trained = stage2_tools(ev.source["run"], ev.index.paths) if ev is not None and ev.source.get("run") else None
    others = _other_systems(cfg, ev, catalog, provenance, trained) if shard.main else []
    results = []
    for label, bench in benches.items():
        if bench.kind == "retrieval":
            if retriever is not None:
                d, (items, lengths) = out / label / "model", fits[label]
                res = evaluate_ranking(dataclasses.replace(bench, items=items), system_name(ev), retriever.run, set(ev.index.paths),
                                       metrics, d, {**provenance, "source": portable_source(ev.source, d), "fingerprint": plan.get(d),
                                        "query_length": lengths, "batching": retriever.new_batching(shard.world)}, shard, trained)
                if res is not None:
                    results.append(res)
            if not shard.main:
                continue
            for s_label, ranker, known, prov, covers in others:
                d = out / label / s_label
                results.append(evaluate_ranking(bench, s_label, ranker.run, known, metrics, d,
                                                {**prov(d), "fingerprint": plan[d]}, trained=covers))
        elif ev is not None and shard.main:
            for mode in probe.modes:
                d = out / label / mode
                res = evaluate_probe(ev, bench, mode, probe, d, metrics.resamples, metrics.seed, trained)
                res.update(config=provenance["config"], is_sample=bench.is_sample, fingerprint=plan[d],
                           source=portable_source(ev.source, d))
                publish_result(d, res)
                results.append(res)
    return results


def _other_systems(cfg: EvaluateConfig, ev: EvalModel | None, catalog, provenance: dict[str, Any],
                   trained: Stage2Tools | None = None) -> list[tuple]:
    """``(label, ranker, known tools, provenance of a results folder, Stage-2 tools)`` of every baseline
    and every system (systems.py) of ``cfg``: ranked on rank 0, beside the model. A system's provenance
    names the run that answers (its own, or the model it re-ranks with: ``trained``), whose Stage 2 gives its coverage."""
    top = cfg.decoding.beam_width
    out = []
    for label, bc in cfg.baseline_sections().items():
        prov = {**provenance, "index_sha256": None, "source": {"baseline": as_plain(bc)}}
        out.append((label, build_baseline(catalog, bc, top), set(catalog.names), lambda d, p=prov: p, None))
    for label, sc in cfg.system_sections().items():
        ranker = build_system(ev, catalog, sc, cfg.decoding)
        answers = getattr(ranker, "source", None) or ev.source  # a standalone system (toolken) answers with its own run

        def prov_of(d: Path, sc=sc, answers=answers, extra=dict(getattr(ranker, "provenance", {}))) -> dict[str, Any]:
            return {**provenance, **extra, "source": {"system": as_plain(sc), "model": portable_source(answers, d)}}

        known = getattr(ranker, "known_tools", None) or set(ev.index.paths)
        own = (ev is None or answers is not ev.source) and answers.get("run")  # a standalone system's run, else ev's
        out.append((label, ranker, known, prov_of, stage2_tools(answers["run"], known) if own else trained))
    return out


def run(cfg: EvaluateConfig | DictConfig | Mapping, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Entry point of ``evaluate.py``: evaluation (default) or ``task=drift``; writes
    ``results.json`` and ``table.md`` under
    ``output_dir`` (default ``cfg.output_dir``, else outputs/evaluate), prints the table,
    returns the summary. A mapping is converted by the one converter. The folder is held by
    one process at a time (``utils.rundir.holding``; ``TOOLSENSE_BUSY=fail|skip|wait``); a skipped run
    returns ``{"skipped": <output_dir>}``."""
    cfg = to_config(EvaluateConfig, cfg)
    if cfg.task == Task.evaluate:  # the catalog made explicit (a run's own), so results.json records the one ranked
        cfg = dataclasses.replace(cfg, catalog=catalog_section(cfg.catalog, cfg.run))
    out = Path(output_dir or cfg.output_dir or "outputs/evaluate")
    out.mkdir(parents=True, exist_ok=True)
    shard = init_shard()
    if not shard.main:  # a helper process of data-parallel retrieval: no tracker, files or table
        if cfg.task == Task.evaluate:
            evaluate(cfg, out, shard)
        return {}
    with holding(out) as held:
        return _run_task(cfg, out, shard) if held else {"skipped": str(out)}


def _run_task(cfg: EvaluateConfig, out: Path, shard: Shard) -> dict[str, Any]:
    """:func:`run`'s work on rank 0, with the output folder held."""
    t0 = time.time()
    plain = as_plain(cfg)
    with evaluation_tracker(cfg.logger, plain, out, cfg.run) as track:
        if cfg.task == Task.drift:
            from toolsense.evaluation.drift import run_drift

            summary = run_drift(cfg.run, cfg.drift, out)
            track(namespaced("eval/drift", summary["flat"]))
            return summary
        results = evaluate(cfg, out, shard)
        warn_trivial(results)
        table = results_table(results, cfg.metrics.ks)
        summary = {"results": results, "config": plain, "git_sha": git_sha(), "code": code_state(),
                   "seconds": round(time.time() - t0, 1)}
        files = {"table.md": table, "results.json": json_text(summary, out / "results.json")}
        report = html_report_text([out])  # report.html: tables, plots, a per-sample browser (html_report.py)
        files.update({"report.html": report} if report is not None else {})
        publish(out, files, job="evaluate")  # the three as one set: a kill leaves the old set or the new one
        log_evaluation(track, out, eval_metrics(results))  # metrics, the samples table, the files (sample_table.py)
    print(table)
    print(f"wrote {out / 'table.md'}, {out / 'results.json'} and {out / 'report.html'} ({summary['seconds']} s)")
    return summary
