"""``train.py``'s job: train one run directory (Stage 1 -> Stage 2), then evaluate it when the config
asks. It stands above training and evaluation (as the entry scripts do): the trainer never imports
the evaluator, this module chains them.

A run directory is held by one process at a time (``utils.rundir.holding``, as evaluate.py, compare.py
and generate.py hold theirs); a second process aimed at it stops naming the holder (pid, host), or,
as ``TOOLSENSE_BUSY`` says, skips that run (``skip``: several processes running one -m sweep then
share its runs, reproduce.py's ``workers``) or waits for it (``wait``); another value is refused. A run trained and
evaluated to the end under the same resolved settings (its done.json; output_dir and logger aside) is
skipped, so rerunning a finished sweep, or one whose model folders were deleted, redoes nothing; a field
that a later version adds is no difference at its default (``run_identity``), and a run finished by an
older version is read back from its config.yaml (``legacy_identity``).
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import Any, Mapping

from toolsense.data.leakage import refuse_leakage
from toolsense.training import Prepared, TrainConfig, prepare, run
from toolsense.utils.config import as_plain, to_config
from toolsense.utils.hydra import shared_output_dir, sweep_name
from toolsense.utils.identity import at_default
from toolsense.utils.paths import cache_root, portable_text
from toolsense.utils.ranks import on_rank0, rank, world_size
from toolsense.utils.rundir import RunDir, config_sha256, holding

log = logging.getLogger(__name__)

NOT_RESULT = ("output_dir", "logger")
"""Config sections that change neither the weights nor the evaluation: a finished run is finished under any of them."""
NOT_EVALUATION = ("run", "output_dir", "logger")
"""An evaluation's keys that say where it reads and writes and how it logs, not what it computes."""


def train(cfg: TrainConfig) -> float | None:
    """Train (and evaluate) ``cfg`` into its output_dir. Returns the last stage's loss, or None
    when the run was skipped (held by another process, or finished under the same settings)."""
    cfg.logger.group = cfg.logger.group or sweep_name()  # a sweep is one W&B group; a single run's is its experiment
    prepared = prepare(cfg)  # refuse a bad run before the folder is claimed or anything is written
    run_dir = shared_output_dir(cfg.output_dir)
    plan = evaluation_plan(cfg, run_dir)  # a bad evaluate.* fails here too, before anything is trained
    refuse_scored_queries(prepared, plan)
    rd = RunDir(run_dir)
    identity, defaults = run_identity(cfg, plan)
    log.info("%s: rank %d of world_size %d", run_dir, rank(), world_size())
    with contextlib.ExitStack() as stack:  # rank 0 holds the run for the whole job; the other ranks follow its outcome
        state = on_rank0(lambda: _claim(stack, rd, identity, defaults), doing="training")
        if state == "busy":  # TOOLSENSE_BUSY=skip: another process holds the run (holding names it)
            return None
        if state == "finished":
            log.info("%s: trained and evaluated earlier under this config (done.json); skipped. Delete %s to redo "
                     "what is missing", run_dir, rd.done_path)
            return None
        loss = train_and_evaluate(cfg, run_dir, prepared, plan)
        rd.mark_finished(identity)
        return loss


def _claim(stack: contextlib.ExitStack, rd: RunDir, identity: dict[str, Any], defaults: set[str]) -> str:
    """Rank 0's claim of the run, held until ``stack`` closes: ``busy`` (another process holds it
    and TOOLSENSE_BUSY=skip), ``finished`` (its done.json matches: :func:`run_identity`) or ``held``."""
    if not stack.enter_context(holding(rd.path, "training")):
        return "busy"
    return "finished" if rd.finished(identity, defaults, legacy=lambda record: legacy_identity(rd, record)) else "held"


def evaluation_plan(cfg: TrainConfig, run_dir: str | Path) -> list:
    """evaluate.py's typed config (``EvaluateConfig``) of every evaluation after training, composed
    once, before training: each stage of ``evaluate.stages`` (stage2 into ``<run>/eval``, stage1 into
    ``<run>/eval/stage1``) from the options ``evaluate`` selects, with ``evaluate.skip`` /
    ``evaluate.settings`` and then that stage's own, then the drift into ``<run>/eval/drift``; []
    when none is asked for. The leakage refusal reads the same configs the evaluation runs."""
    ev, run_dir = cfg.evaluate, Path(run_dir)
    if not ev.scores and not ev.drift:
        return []
    from toolsense.evaluation.config import compose_evaluate

    options = [*([f"suite={ev.suite}"] if ev.suite else []), *([f"decoding={ev.decoding}"] if ev.decoding else []),
               *(f"+benchmark@benchmarks.{label}={name}" for label, name in ev.benchmarks.items()),
               *(f"+baseline@baselines.{label}={name}" for label, name in ev.baselines.items())]
    if cfg.logger.kind == "wandb" and "logger" not in ev.settings:  # W&B for the evaluation too
        options.append("logger=wandb")
    plan = []
    for stage in ev.stages if ev.scores else ():
        out = run_dir / "eval" if stage == "stage2" else run_dir / "eval" / stage
        own = getattr(ev, stage)
        plan.append(compose_evaluate(options, [("evaluate", {"run": str(run_dir), "stage": stage, "output_dir": str(out)}, ()),
                                               ("evaluate", ev.settings, ev.skip),
                                               (f"evaluate.{stage}", own.settings, own.skip)]))
    if ev.drift:
        plan.append(compose_evaluate(layers=[("evaluate", {"run": str(run_dir), "task": "drift",
                                                           "output_dir": str(run_dir / "eval" / "drift")}, ())]))
    return plan


def run_identity(cfg: TrainConfig, plan: list) -> tuple[dict[str, Any], set[str]]:
    """What done.json records of a finished run: the resolved training settings (but NOT_RESULT and
    the evaluate section, which ``plan`` resolves) and each evaluation's resolved settings (but
    where it reads and writes, and its logger), this machine's paths made portable (a run restored
    from an archive elsewhere is the same run); with the keys at their declared default, so a field
    added later at its default is no difference (``utils/identity.py``)."""
    train = {k: v for k, v in as_plain(cfg).items() if k not in (*NOT_RESULT, "evaluate")}
    evaluations = [{k: v for k, v in as_plain(ev).items() if k not in NOT_EVALUATION} for ev in plan]
    defaults = at_default(cfg, "train").union(*(at_default(ev, f"evaluations.{i}") for i, ev in enumerate(plan)))
    identity = json.loads(portable_text(json.dumps({"train": train, "evaluations": evaluations}, default=str)))
    return identity, defaults


def legacy_identity(rd: RunDir, record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The identity of a run finished before done.json recorded it (toolsense <= 42b152e: the sha256
    of the composed config but NOT_RESULT, evaluations as ``evaluate.overrides`` strings): read back
    from its config.yaml when that is the config the sha256 names (an archived one with its
    ``$TOOLSENSE_CACHE`` made this machine's), else None (not finished)."""
    saved = json.loads(json.dumps(rd.config()).replace("$TOOLSENSE_CACHE", str(cache_root())))
    if not saved or record.get("config_sha256") != config_sha256({k: v for k, v in saved.items() if k not in NOT_RESULT}):
        return None
    old = saved.get("evaluate") or {}
    try:
        cfg = to_config(TrainConfig, {**saved, "evaluate": {"drift": old.get("drift", False),
                                                             "stages": old.get("stages", ["stage2"])}}, ignore_unknown=True)
        plan = legacy_plan(old, rd.path)
    except ValueError:
        return None
    return run_identity(cfg, plan)[0]


def legacy_plan(old: Mapping[str, Any], run_dir: Path) -> list:
    """The evaluation plan of an ``evaluate`` section written before it was typed (suite, overrides,
    stage_overrides, stages, drift), composed as that version composed it."""
    from toolsense.evaluation.config import compose_evaluate

    suite, overrides = old.get("suite"), list(old.get("overrides") or ())
    plan = []
    for stage in old.get("stages", ["stage2"]) if suite is not None or overrides else ():
        out = run_dir / "eval" if stage == "stage2" else run_dir / "eval" / stage
        plan.append(compose_evaluate([f"run={run_dir}", f"stage={stage}", f"output_dir={out}",
                                      *([f"suite={suite}"] if suite else []), *overrides,
                                      *(old.get("stage_overrides") or {}).get(stage, ())]))
    if old.get("drift"):
        plan.append(compose_evaluate([f"run={run_dir}", "task=drift", f"output_dir={run_dir / 'eval' / 'drift'}"]))
    return plan


def refuse_scored_queries(prepared: Prepared, plan: list) -> None:
    """Stage 2 must not train on a query the run's evaluation scores (by normalised text, or id
    within one file): refused naming each source and benchmark file and the count."""
    if not prepared.sources or not plan:
        return
    from toolsense.evaluation.leakage import scored_query_sets

    refuse_leakage(prepared.sources, scored_query_sets(plan))


def train_and_evaluate(cfg: TrainConfig, run_dir: str, prepared: Prepared | None = None,
                       plan: list = ()) -> float | None:
    """Train, then run each evaluation of ``plan`` (:func:`evaluation_plan`); the last stage's loss.
    Under torchrun every process takes part in each evaluation (data-parallel retrieval)."""
    summary = run(cfg, output_dir=run_dir, prepared=prepared)
    if plan:
        from toolsense.evaluation.runner import run as evaluate  # the evaluator's model code loads only after training

        for ev_cfg in plan:
            log.info("evaluating %s (%s, %s)", run_dir, ev_cfg.task, ev_cfg.output_dir)
            evaluate(ev_cfg)
    last = summary.get("stage2") or summary.get("stage1") or {}
    return last.get("train_loss")


def evaluate(cfg, output_dir: str | Path | None = None) -> dict[str, Any]:
    """evaluate.py's work once its config is checked (an ``EvaluateConfig``): with ``checkpoint=<N>`` that
    Trainer checkpoint of ``stage`` becomes a model folder first (training/snapshot.py: the evaluation room
    does not import training), then the evaluation (evaluation/runner.py). Returns its summary."""
    from toolsense.evaluation.runner import run as run_evaluation

    if cfg.checkpoint is not None:
        from toolsense.training.snapshot import export_checkpoint

        export_checkpoint(cfg.run, cfg.stage or "stage2", cfg.checkpoint)
    return run_evaluation(cfg, output_dir=output_dir)
