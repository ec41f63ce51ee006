"""The audit pipeline: load (or generate) traces -> PT2D -> dilution sweeps -> (fine-tune) ->
token-class redaction -> results.json, samples.jsonl, report.md and plots in output_dir (results.json,
report.md and the plots published as one set under manifest.json: utils/publish.py)."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import numpy as np

from toolsense.audit.config import AuditConfig
from toolsense.audit.dilution import run_dilution
from toolsense.audit.finetune import finetune_key, finetune_lora
from toolsense.audit.generator import write_demo_traces
from toolsense.audit.pt2d import rank_tools, run_pt2d
from toolsense.audit.redaction_eval import auroc_deltas, redaction_variants, score_variants
from toolsense.audit.report import findings, report_files
from toolsense.audit.scorers import ScoreCache, build_scorer
from toolsense.audit.scorers.base import default_cache_dir
from toolsense.audit.stats import json_safe
from toolsense.audit.traces import TraceSet, load_traces
from toolsense.utils.io import git_sha, sha256_file
from toolsense.utils.publish import publish
from toolsense.utils.secrets import Scrubber

log = logging.getLogger(__name__)

DELTA_A = "delta_A = A_original - A_redacted (the paper's sign: positive = the scorer depends on the class)"


def load_audit_traces(cfg: AuditConfig, out: Path) -> TraceSet:
    if cfg.mode == "demo":
        path = out / "traces.jsonl"
        write_demo_traces(cfg.generator, path)
        cfg.data.path = str(path)
    d = cfg.data
    return load_traces(d.path, d.id_field, d.label_field, d.partition_field, d.tools_field, d.prompt_fields, d.tools,
                       d.on_missing_tool)


def score_redactions(cfg: AuditConfig, traces: TraceSet, fit: np.ndarray, ev: np.ndarray, out: Path) -> dict:
    """Fine-tune (when enabled), then score original + redacted variants of the eval records."""
    scorer_cfg = cfg.scorer
    if cfg.finetune.enabled:
        fit_records = [r for r, m in zip(traces.records, fit) if m]
        key = finetune_key(cfg.model, fit_records, cfg.prompt, cfg.finetune)
        adapter = finetune_lora(cfg.model, fit_records, cfg.prompt, cfg.finetune,
                                default_cache_dir(scorer_cfg).parent / "audit_adapters" / key)
        scorer_cfg = dataclasses.replace(scorer_cfg, adapter=str(adapter))
    scorer = build_scorer(scorer_cfg, cfg.model, cfg.prompt)
    cache = ScoreCache(default_cache_dir(scorer_cfg) if scorer_cfg.cache else None)
    scrub = Scrubber.from_env([scorer_cfg.api_key_env])  # an endpoint may echo the key in its answers
    if changed := cache.scrub(scrub):
        log.warning("scrubbed secrets from %d cached answers of %s (written before answers were scrubbed)", changed,
                    default_cache_dir(scorer_cfg))
    sets, counts, rendered = redaction_variants(traces, cfg.redaction, cfg.prompt)
    idx = np.flatnonzero(ev).tolist()
    scores, unparseable = score_variants(scorer, cache, sets, idx, cfg.prompt, scorer_cfg.unparseable_score,
                                         out / "samples.jsonl", scorer_cfg.batch_size, rendered, scrub)
    return {"scorer": scorer.identity, "decoding": scorer.decoding, "n_scored": len(idx), "delta_A_definition": DELTA_A,
            "adapter": scorer_cfg.adapter, "variants": auroc_deltas(traces, idx, scores, counts, unparseable, cfg.redaction, cfg.stats)}


def run(cfg: AuditConfig) -> dict:
    """Run every enabled stage; returns the results dict (also written to results.json)."""
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    traces = load_audit_traces(cfg, out)
    fit, ev = traces.split(cfg.data.fit_partitions, cfg.data.eval_partitions)
    res: dict = {"config": dataclasses.asdict(cfg), "git_sha": git_sha(),
                 "data": {"path": cfg.data.path, "sha256": sha256_file(cfg.data.path), "n_records": len(traces),
                          "tools": traces.tools, "fit": cfg.data.fit_partitions,
                          "eval": sorted(set(traces.partitions[ev].tolist()), key=str),
                          "n_fit": int(fit.sum()), "n_eval": int(ev.sum())}}
    ranking, rows = list(traces.tools), []
    if cfg.pt2d.enabled:
        rows = run_pt2d(traces, fit, ev, cfg.pt2d, cfg.stats, out / "pt2d.jsonl")
        ranking = rank_tools(rows)
        res["pt2d"] = {"rows": rows, "ranking": ranking}
    if cfg.dilution.enabled:
        res["dilution"] = run_dilution(traces, fit, ev, cfg.dilution, cfg.pt2d, ranking, cfg.stats, out / "dilution.jsonl", rows)
    if cfg.redaction.enabled and cfg.redaction.classes:
        res["redaction"] = score_redactions(cfg, traces, fit, ev, out)
    res["findings"] = findings(res)
    res = json_safe(res)  # valid JSON: an undefined number is null, its dict says why (stats.AUROC.as_dict)
    results = json.dumps(res, indent=2, default=str, allow_nan=False)
    # results.json, report.md and its plots as one set: a kill leaves the old set or the new one (utils/publish.py)
    publish(out, {"results.json": results, **report_files(res)}, keep=["samples.jsonl", "pt2d.jsonl", "dilution.jsonl"], job="audit")
    print("\n".join(["", "Findings:"] + res["findings"] + [f"Report: {out / 'report.md'}"]))
    return res


def sweep_metric(res: dict) -> float:
    """audit.py's return value: the largest delta_A = A_original - A_redacted over the classes
    (or the top PT2D gap)."""
    if "redaction" in res:
        deltas = [v["delta_A"]["auroc"] for k, v in res["redaction"]["variants"].items() if k != "original"]
        return float(max(deltas)) if deltas else 0.0
    if "pt2d" in res:
        return float(max(r["gap"] for r in res["pt2d"]["rows"]))
    return 0.0
