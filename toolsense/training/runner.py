"""``run(cfg)``: Stage 1 → Stage 2 into one run directory.

The run directory (the contract evaluation reads)::

    config.yaml     resolved config (model, catalog, index, prompts, ... sections)
    index.json      ToolIndex.save(...)
    stage1/         HF model folder (LoRA merged) + tokenizer with the virtual tokens
    stage2/         same, after retrieval SFT
    metrics.jsonl   training metrics, one JSON per line
    checkpoints/    Trainer checkpoints per stage (a rerun resumes from the last one)

Rerunning the same command with the same ``output_dir`` skips finished stages and resumes an
interrupted one; a run directory holding a different config is refused.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from omegaconf import DictConfig, OmegaConf

from toolsense.catalog import Catalog, Query
from toolsense.catalog.config import load_from_config
from toolsense.data.leakage import QuerySet
from toolsense.data.memorization import build_memorization_examples
from toolsense.data.retrieval import retrieval_examples
from toolsense.data.sources import load_query_sets
from toolsense.index import ToolIndex
from toolsense.index.config import index_from_config
from toolsense.models.encoders import encoder_embeddings
from toolsense.tracking import make_tracker
from toolsense.training.config import TrainConfig, to_train_config
from toolsense.training.data_identity import check_data, data_fingerprints
from toolsense.training.memory import device_memory, model_shape, refuse_unfit
from toolsense.training.stage import StageRunner, stage_done
from toolsense.training.trainer import plan_batch, use_bf16, world_size
from toolsense.utils.config import to_plain
from toolsense.utils.errors import ConfigError, DataError
from toolsense.utils.identity import at_default
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.rundir import RunDir

log = logging.getLogger(__name__)


def _is_main() -> bool:
    import os

    return int(os.environ.get("RANK", "0")) == 0


NOT_TRAINING = ("output_dir", "evaluate", "logger")
"""Config sections that do not change what is trained: a rerun may differ in them."""


def write_config(cfg: DictConfig | dict, run_dir: Path, defaults: Iterable[str] = ()) -> dict:
    """Save the resolved config as ``config.yaml``; refuse a run dir that holds another config (a
    field added since the run began is no difference at its default: ``defaults``)."""
    data = to_plain(cfg) if isinstance(cfg, DictConfig) else dict(cfg)
    RunDir(run_dir).write_config(data, ignore=NOT_TRAINING, defaults=defaults)
    return data


def load_or_build_index(cfg: TrainConfig, catalog: Catalog, run_dir: Path) -> ToolIndex:
    path = RunDir(run_dir).index_path
    if path.exists():
        return ToolIndex.load(path, catalog)
    index = index_from_config(cfg.index, catalog, lambda: encoder_embeddings(catalog, cfg.index.encoder))
    if _is_main():
        index.save(path)
    return index


def _tags(cfg: TrainConfig, stage: str) -> list[str]:
    return [f"stage:{stage}", f"tuning:{cfg.tuning.method}", f"index:{cfg.index.builder}", f"model:{cfg.model.name_or_path}"] + [
        f"format:{f}" for f in cfg.memorization.formats
    ]


@dataclass
class Prepared:
    """What :func:`prepare` read and checked before a run directory is claimed."""

    catalog: Catalog
    sources: list[QuerySet] = field(default_factory=list)
    """Stage 2's sources as read, each with its files (``stage2.sources.<i>``); empty when Stage 2 is off."""


def stage2_queries(cfg: TrainConfig, sources: Optional[list[QuerySet]] = None) -> list[Query]:
    """Stage 2's queries, every source in order, the first ``stage2.max_queries`` when > 0."""
    queries = [q for s in (sources if sources is not None else load_query_sets(cfg.stage2.sources)) for q in s.queries]
    return queries[: cfg.stage2.max_queries] if cfg.stage2.max_queries > 0 else queries


def prepare(cfg: TrainConfig) -> Prepared:
    """Everything that can refuse a run, before anything is written or a model loads: the batch
    plan (``trainer.effective_batch`` over this job's processes), a stage that cannot fit this
    job's GPUs (:func:`refuse_unfit_model`), the catalog (a file without
    tools is refused naming it) and the Stage-2 sources (each file read, and, under
    ``on_unknown_tool=error``, every gold tool in the catalog). ``train.py`` runs it before it
    claims the folder, so a failed start leaves nothing behind that would refuse the corrected
    command."""
    batch = plan_batch(cfg.trainer, world_size())
    refuse_unfit_model(cfg, batch.per_device)
    catalog = load_from_config(cfg.catalog)
    sources = load_query_sets(cfg.stage2.sources) if cfg.stage2.enabled else []
    queries = stage2_queries(cfg, sources)
    for s in sources:  # on_unknown_tool=skip would drop all of them after Stage 1 has trained
        if not any(t in catalog for q in s.queries for t in q.tools):
            raise DataError(f"{s.name} ({', '.join(s.files)}): none of its {len(s.queries)} queries names a tool of the "
                            f"catalog ({cfg.catalog.path or 'the demo catalog'}); Stage 2 would train on nothing")
    if cfg.stage2.on_unknown_tool == "error":
        unknown = next(((q, t) for q in queries for t in q.tools if t not in catalog), None)
        if unknown is not None:
            src = next((f"{s.name} ({', '.join(s.files)})" for s in sources if unknown[0] in s.queries), "stage2")
            raise DataError(f"{src}: query {unknown[0].query_id!r} names a tool not in the catalog ({unknown[1]!r}); "
                            "set stage2.on_unknown_tool=skip to drop such tools")
    return Prepared(catalog, sources)


def refuse_unfit_model(cfg: TrainConfig, per_device: int) -> None:
    """The memory plan of the configured model over this job's ranks, against this GPU (none on a CPU):
    refused before anything loads when it cannot fit (``memory.refuse_unfit``). On a GPU a model
    whose config cannot be read is refused too, rather than trained without a plan."""
    if cfg.head.kind != "tokens":
        return
    device = None if cfg.trainer.use_cpu else device_memory()
    shape = model_shape(cfg.model)
    if shape is None:
        if device is not None:
            raise ConfigError(f"model.name_or_path={cfg.model.name_or_path!r}: its config.json cannot be read, so the memory "
                             "plan cannot check that the stage fits this GPU (the log says why); make it readable (a local "
                             "folder, or HF_HUB_OFFLINE=0 with the hub reachable)")
        return
    refuse_unfit(shape, cfg.tuning, cfg.trainer, world_size(), device, use_bf16(cfg.trainer), per_device)


def stage2_examples(cfg: TrainConfig, index: ToolIndex, queries: list[Query]) -> tuple[list, dict[str, Any]]:
    """Stage 2's examples and what ``on_unknown_tool=skip`` dropped: ``{tools, queries, sample}``
    (gold tools skipped, queries left with none, the first few ``query_id: tool``)."""
    skipped: list[tuple[str, str]] = []
    examples = retrieval_examples(queries, index, cfg.prompts, cfg.stage2.multi_tool, cfg.stage2.on_unknown_tool, skipped)
    kept = {ex.meta.get("query_id") for ex in examples}
    report = {"tools": len(skipped), "queries": len({qid for qid, _ in skipped} - kept),
              "sample": [f"{qid}: {tool}" for qid, tool in skipped[:5]]}
    return examples, report


def _run_stage(name: str, cfg: TrainConfig, raw: dict, index: ToolIndex, examples, run_dir: Path, init: Optional[str]) -> dict:
    tracker = make_tracker(
        cfg.logger, run_dir=run_dir, name=f"{cfg.experiment}-{cfg.tuning.method}-{name}", group=cfg.experiment,
        tags=_tags(cfg, name), config=raw, extra={"stage": name},
    )
    try:
        schedule = cfg.stage1 if name == "stage1" else cfg.stage2
        return StageRunner(name, cfg, schedule, index, examples, run_dir, init, tracker).run()
    finally:
        tracker.finish()


def _run_toolken(cfg: TrainConfig, raw: dict, index: ToolIndex, run_dir: Path, prepared: Prepared) -> dict[str, Any]:
    """``head.kind=toolken``: the frozen base model's toolken rows on the Stage-2 queries
    (training/toolken.py) into ``<run>/toolken``; skipped when done, resumed when interrupted."""
    from toolsense.training.toolken import STAGE, ToolkenRunner, toolken_done

    if world_size() > 1:
        raise ConfigError("head.kind=toolken trains its rows in one process (the frozen LM reads each prompt once); "
                          "run train.py without torchrun")
    if toolken_done(run_dir):
        log.info("toolken: %s exists, skipping", run_dir / STAGE)
        return {}
    tracker = make_tracker(cfg.logger, run_dir=run_dir, name=f"{cfg.experiment}-{STAGE}", group=cfg.experiment,
                           tags=[f"stage:{STAGE}", "head:toolken", f"model:{cfg.model.name_or_path}"], config=raw, extra={"stage": STAGE})
    try:
        result = ToolkenRunner(cfg, index, stage2_queries(cfg, prepared.sources), run_dir, tracker, prepared.catalog).run()
    finally:
        tracker.finish()
    summary = {"stage2": {**result, "head": "toolken"}}
    if _is_main():
        with open(RunDir(run_dir).metrics_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"summary": summary}) + "\n")
    return summary


def run(cfg: DictConfig | dict | TrainConfig, output_dir: str | Path | None = None, prepared: Optional[Prepared] = None) -> dict[str, Any]:
    """Train the configured stages into ``output_dir`` (default ``cfg.output_dir``); returns a
    summary ``{stage: {train_loss, global_step, ...}}`` (also appended to metrics.jsonl); Stage 2's
    carries ``skipped_unknown_tools`` (see :func:`stage2_examples`). ``prepared``: what
    :func:`prepare` returned for this config (else it runs here, before anything is written)."""
    typed = cfg if isinstance(cfg, TrainConfig) else to_train_config(cfg)
    prepared = prepared or prepare(typed)
    run_dir = Path(output_dir or typed.output_dir or "outputs/train")
    rd = RunDir(run_dir)
    raw = write_config(cfg if not isinstance(cfg, TrainConfig) else OmegaConf.structured(cfg), run_dir, at_default(typed))
    catalog = prepared.catalog
    check_data(run_dir, data_fingerprints(catalog, typed.catalog.path, prepared.sources))  # a resume on other data: refused
    index = load_or_build_index(typed, catalog, run_dir)
    if typed.head.kind == "toolken":
        return _run_toolken(typed, raw, index, run_dir, prepared)
    summary: dict[str, Any] = {}
    earlier = last_summary(rd.metrics_path)  # what an earlier invocation (killed in Stage 2, say) finished
    if typed.stage1.enabled:
        if stage_done(rd.stage("stage1")):
            log.info("stage1: %s exists, skipping", rd.stage("stage1"))
            summary.update({k: v for k, v in earlier.items() if k == "stage1"})
        else:
            examples = build_memorization_examples(catalog, index, typed.memorization)
            summary["stage1"] = _run_stage("stage1", typed, raw, index, examples, run_dir, None)
            _append_summary(rd, summary)
    if typed.stage2.enabled:
        init = typed.stage2.init_from or (str(rd.stage("stage1")) if typed.stage1.enabled else None)
        if stage_done(rd.stage("stage2")):
            log.info("stage2: %s exists, skipping", rd.stage("stage2"))
        else:
            examples, skipped = stage2_examples(typed, index, stage2_queries(typed, prepared.sources))
            summary["stage2"] = {**_run_stage("stage2", typed, raw, index, examples, run_dir, init), "skipped_unknown_tools": skipped}
            _append_summary(rd, summary)
    return summary


def last_summary(metrics_path: Path) -> dict[str, Any]:
    """The last ``summary`` row of a run's metrics.jsonl ({} when none): the stages finished so far."""
    rows = [r for r in JsonlStore(metrics_path, repair=False).rows if "summary" in r]  # a torn last line: skipped
    return rows[-1]["summary"] if rows else {}


def _append_summary(rd: RunDir, summary: dict[str, Any]) -> None:
    """One ``summary`` row of every stage so far, after each stage (readers take the last row): a
    run killed in Stage 2 keeps Stage 1's, and the resumed run's last row holds both stages."""
    if _is_main():
        with open(rd.metrics_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"summary": summary}) + "\n")
