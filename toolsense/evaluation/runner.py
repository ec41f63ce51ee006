"""``evaluate.py``'s job: load the model (a run directory, or an untrained base model), run
every configured benchmark — parametric retrieval (constrained + free-form), MCQ/QA probes in
each mode, and the baselines on the same retrieval benchmarks — and write one table.

Layout under ``output_dir``::

    <benchmark>/<system>/samples.jsonl, results.json   one per evaluation, resumable
    <benchmark>/<system>/samples.fingerprint.json      what produced them (resume only on a match)
    results.json                                        all of them + the resolved config
    table.md                                            the combined table (also printed)
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from omegaconf import DictConfig, OmegaConf

from toolsense.catalog.config import CatalogConfig, load_from_config
from toolsense.data.prompts import PromptConfig
from toolsense.evaluation.baselines import build_baseline
from toolsense.evaluation.benchmarks import Benchmark, BenchmarkConfig, load_benchmark
from toolsense.evaluation.config import BaselineConfig, DecodingConfig, DriftConfig, ProbeConfig
from toolsense.evaluation.context import EvalModel, from_section, load_run, load_untrained
from toolsense.evaluation.distributed import Shard, init_shard
from toolsense.evaluation.fingerprint import (benchmark_identity, catalog_identity, claim, decoding_identity,
                                              model_identity)
from toolsense.evaluation.outputs import git_sha, results_table, write_json
from toolsense.evaluation.probes import evaluate_probe
from toolsense.decoding.retrieval import Retriever
from toolsense.evaluation.tasks import evaluate_ranking
from toolsense.evaluation.tracking import EvalLoggerConfig, flatten_results, tracker
from toolsense.index.config import IndexConfig
from toolsense.models import ModelConfig

log = logging.getLogger(__name__)


def _sections(cfg: Mapping, single: str, many: str, cls) -> dict[str, Any]:
    """``many`` (a suite's label -> section map) if set, else the single ``single`` section."""
    if cfg.get(many):
        return {label: from_section(cls, sec, f"{many}.{label}", strict=True) for label, sec in cfg[many].items()}
    if cfg.get(single):
        sec = from_section(cls, cfg[single], single, strict=True)
        return {getattr(sec, "label", None) or getattr(sec, "kind", None) or single: sec}
    return {}


def load_model_under_test(cfg: Mapping) -> EvalModel:
    if cfg.get("run"):
        return load_run(cfg["run"], cfg.get("stage") or "stage2", cfg.get("device"), cfg.get("dtype"))
    return load_untrained(
        from_section(ModelConfig, cfg.get("model"), "model", strict=True),
        from_section(CatalogConfig, cfg.get("catalog"), "catalog", strict=True),
        from_section(IndexConfig, cfg.get("index"), "index", strict=True),
        from_section(PromptConfig, cfg.get("prompts"), "prompts", strict=True),
        cfg.get("device"),
    )


def system_name(ev: EvalModel) -> str:
    return f"{ev.source['model']}:{ev.source['stage']}"


def _plan(out: Path, benches: Mapping[str, Benchmark], ev: EvalModel | None, catalog, baselines_cfg: Mapping[str, BaselineConfig],
          dec: DecodingConfig, probe: ProbeConfig) -> dict[Path, dict[str, Any]]:
    """Every evaluation folder this run writes, with its fingerprint (fingerprint.py)."""
    plan: dict[Path, dict[str, Any]] = {}
    model = model_identity(ev) if ev is not None else None
    baseline_catalog = catalog_identity(catalog) if baselines_cfg else None
    probe_fp = {k: v for k, v in dataclasses.asdict(probe).items() if k not in ("batch_size", "modes")}
    for label, bench in benches.items():
        b = benchmark_identity(bench)
        if bench.kind == "retrieval":
            if model is not None:
                plan[out / label / "model"] = {"evaluation": "retrieval", "system": model, "benchmark": b,
                                               "decoding": decoding_identity(dec)}
            for bl_label, bc in baselines_cfg.items():
                plan[out / label / bl_label] = {
                    "evaluation": "retrieval", "benchmark": b, "decoding": {"top": dec.beam_width, "ks": dec.ks},
                    "system": {"baseline": {"kind": bc.kind, "encoder": bc.encoder}, "catalog_sha256": baseline_catalog}}
        elif model is not None:
            for mode in probe.modes:
                plan[out / label / mode] = {"evaluation": bench.kind, "system": model, "benchmark": b, "mode": mode,
                                            "probe": probe_fp}
    return plan


def evaluate(cfg: Mapping, output_dir: str | Path, shard: Shard = Shard()) -> list[dict]:
    """Run every benchmark × system of ``cfg`` (a plain resolved mapping); returns the
    per-evaluation results (each also written to its own results.json). Every evaluation folder
    is claimed first (fingerprint.py): resumed on an exact match, else refused unless
    ``overwrite``. Under torchrun the parametric retrieval is shared out between the processes;
    baselines and probes run on rank 0, which alone returns results (distributed.py)."""
    out = Path(output_dir)
    dec = from_section(DecodingConfig, cfg.get("decoding"), "decoding", strict=True)
    probe = from_section(ProbeConfig, cfg.get("probe"), "probe", strict=True)
    where = "benchmarks.{}" if cfg.get("benchmarks") else "benchmark"
    benches = {label: load_benchmark(bc, where.format(label))
               for label, bc in _sections(cfg, "benchmark", "benchmarks", BenchmarkConfig).items()}
    for label, b in benches.items():
        b.name = label
    baselines_cfg = _sections(cfg, "baseline", "baselines", BaselineConfig)
    ev = load_model_under_test(cfg) if cfg.get("parametric", True) else None
    catalog = ev.catalog if ev is not None else load_from_config(from_section(CatalogConfig, cfg.get("catalog"), "catalog", strict=True))
    plan: dict[Path, dict[str, Any]] = {}

    def _claim() -> None:  # rank 0 only: hashing the checkpoint once is enough
        plan.update(_plan(out, benches, ev, catalog, baselines_cfg, dec, probe))
        claim(list(plan.items()), bool(cfg.get("overwrite", False)))

    shard.on_main(_claim)
    provenance: dict[str, Any] = {"config": dict(cfg)}
    if ev is not None:
        provenance.update(index_sha256=ev.index_sha256, source=ev.source)
    retriever = Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts, dec) if ev is not None else None
    baselines = {label: build_baseline(catalog, bc, dec.beam_width) for label, bc in baselines_cfg.items()} if shard.main else {}
    results = []
    for label, bench in benches.items():
        if bench.kind == "retrieval":
            if retriever is not None:
                d = out / label / "model"
                res = evaluate_ranking(bench, system_name(ev), retriever.run, set(ev.index.paths), dec, d,
                                       {**provenance, "fingerprint": plan.get(d)}, shard)
                if res is not None:
                    results.append(res)
            if not shard.main:
                continue
            for bl_label, ranker in baselines.items():
                d = out / label / bl_label
                bl_dec = DecodingConfig(**{**dec.__dict__, "free_form": False})
                prov = {**provenance, "index_sha256": None, "source": {"baseline": baselines_cfg[bl_label].__dict__},
                        "fingerprint": plan[d]}
                results.append(evaluate_ranking(bench, bl_label, ranker.run, set(catalog.names), bl_dec, d, prov))
        elif ev is not None and shard.main:
            for mode in probe.modes:
                d = out / label / mode
                res = evaluate_probe(ev, bench, mode, probe, d, dec.resamples, dec.seed)
                res.update(config=provenance["config"], is_sample=bench.is_sample, fingerprint=plan[d])
                write_json(d / "results.json", res)
                results.append(res)
    return results


def run(cfg: DictConfig | Mapping, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Entry point of ``evaluate.py``: evaluation (default), ``task=drift``, ``task=compare``
    (an ablation table over earlier evaluations, see compare.py) or ``task=annotate|kappa``
    (rating sheets and Fleiss' κ, annotate.py); writes
    ``results.json`` and ``table.md`` under the output dir, prints the table, returns the summary."""
    plain = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
    out = Path(output_dir or plain.get("output_dir") or "outputs/evaluate")
    out.mkdir(parents=True, exist_ok=True)
    logger_cfg = from_section(EvalLoggerConfig, plain.get("eval_logger"), "eval_logger", strict=True)
    shard = init_shard()
    if not shard.main:  # a helper process of data-parallel retrieval: no tracker, files or table
        if plain.get("task", "evaluate") == "evaluate":
            evaluate(plain, out, shard)
        return {}
    t0 = time.time()
    if plain.get("task") in ("annotate", "kappa"):
        return rating_task(plain, out)
    if plain.get("task") == "compare":
        from toolsense.evaluation.compare import CompareConfig, run_compare

        return run_compare(from_section(CompareConfig, plain.get("compare"), "compare", strict=True), out)
    with tracker(logger_cfg, plain, out) as track:
        if plain.get("task", "evaluate") == "drift":
            from toolsense.evaluation.drift import run_drift

            if not plain.get("run"):
                raise ValueError("task=drift needs run=<training run directory>")
            summary = run_drift(plain["run"], from_section(DriftConfig, plain.get("drift"), "drift", strict=True), out)
            track({f"eval/drift/{k}": v for k, v in summary["flat"].items()})
            return summary
        results = evaluate(plain, out, shard)
        dec = from_section(DecodingConfig, plain.get("decoding"), "decoding", strict=True)
        table = results_table(results, dec.ks)
        (out / "table.md").write_text(table, encoding="utf-8")
        summary = {"results": results, "config": plain, "git_sha": git_sha(), "seconds": round(time.time() - t0, 1)}
        write_json(out / "results.json", summary)
        track(flatten_results(results))
    print(table)
    print(f"wrote {out / 'table.md'} and {out / 'results.json'} ({summary['seconds']} s)")
    return summary


def rating_task(cfg: Mapping, out: Path) -> dict[str, Any]:
    """``task=annotate``: a rating sheet per configured benchmark (annotate.py) under ``out``;
    ``task=kappa``: Fleiss' κ per benchmark from ``annotate.sheets``."""
    from toolsense.evaluation.annotate import AnnotateConfig, run_kappa, write_sheet

    acfg = from_section(AnnotateConfig, cfg.get("annotate"), "annotate", strict=True)
    if cfg["task"] == "kappa":
        return run_kappa(acfg, out)
    where = "benchmarks.{}" if cfg.get("benchmarks") else "benchmark"
    sheets = {}
    for label, bc in _sections(cfg, "benchmark", "benchmarks", BenchmarkConfig).items():
        bench = load_benchmark(bc, where.format(label))
        bench.name = label
        sheets[label] = str(write_sheet(bench, acfg, out))
        print(f"wrote {sheets[label]} ({min(acfg.items, len(bench.items))} items, {acfg.raters} rater columns)")
    return {"sheets": sheets}


CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def evaluate_trained_run(run_dir: str | Path, suite: str | None = None, overrides: Sequence[str] = (),
                         drift: bool = False, stages: Sequence[str] = ("stage2",)) -> dict[str, Any] | None:
    """evaluate.py on a finished training run (train.py's ``evaluate.suite=...``), once per
    checkpoint of ``stages``: stage2 into ``<run_dir>/eval``, another stage into
    ``<run_dir>/eval/<stage>``; with ``drift`` its embedding drift into ``<run_dir>/eval/drift``.
    Returns the last stage's summary.
    Composes evaluate.yaml with ``run=<run_dir>`` plus the overrides, from inside a running Hydra
    app or standalone. Under torchrun every process takes part (data-parallel retrieval)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    def _compose(ovr: list[str]):
        if GlobalHydra.instance().is_initialized():
            return compose("evaluate", overrides=ovr)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose("evaluate", overrides=ovr)

    run_dir = Path(run_dir)
    summary = None
    for stage in stages if suite or overrides else ():
        out = run_dir / "eval" if stage == "stage2" else run_dir / "eval" / stage
        ovr = [f"run={run_dir}", f"stage={stage}", f"output_dir={out}"] + ([f"suite={suite}"] if suite else []) + list(overrides)
        log.info("evaluating %s (%s)", run_dir, " ".join(ovr[1:]))
        summary = run(_compose(ovr))
    if drift:
        run(_compose([f"run={run_dir}", "task=drift", f"output_dir={run_dir / 'eval' / 'drift'}"]))
    return summary
