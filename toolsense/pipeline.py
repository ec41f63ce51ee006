"""``train.py``'s job: train one run directory (Stage 1 -> Stage 2), then evaluate it when the config
asks. It stands above training and evaluation (as the entry scripts do): the trainer never imports
the evaluator, this module chains them.

A run directory is held by one process at a time (``utils.rundir.holding``, as evaluate.py, compare.py
and generate.py hold theirs); a second process aimed at it stops naming the holder (pid, host), or,
as ``TOOLSENSE_BUSY`` says, skips that run (``skip``: several processes running one -m sweep then
share its runs, reproduce.py's ``workers``) or waits for it (``wait``); another value is refused. A run trained and
evaluated to the end under the same config (its done.json; output_dir and logger aside) is skipped,
so rerunning a finished sweep, or one whose model folders were deleted, redoes nothing.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Mapping

from toolsense.data.leakage import refuse_leakage
from toolsense.training import Prepared, TrainConfig, prepare, run
from toolsense.utils.hydra import shared_output_dir, sweep_name
from toolsense.utils.ranks import on_rank0, rank, world_size
from toolsense.utils.rundir import RunDir, holding

log = logging.getLogger(__name__)

NOT_RESULT = ("output_dir", "logger")
"""Config sections that change neither the weights nor the evaluation: a finished run is finished under any of them."""


def train(cfg: TrainConfig, plain: Mapping[str, Any]) -> float | None:
    """Train (and evaluate) ``cfg`` into its output_dir; ``plain``: the composed config as plain
    data, whose sections but NOT_RESULT identify a finished run. Returns the last stage's loss, or
    None when the run was skipped."""
    cfg.logger.group = cfg.logger.group or sweep_name()  # a sweep is one W&B group; a single run's is its experiment
    prepared = prepare(cfg)  # refuse a bad run before the folder is claimed or anything is written
    run_dir = shared_output_dir(cfg.output_dir)
    plan = evaluation_plan(cfg, run_dir)  # a bad evaluate.* fails here too, before anything is trained
    refuse_scored_queries(prepared, plan)
    rd = RunDir(run_dir)
    identity = {k: v for k, v in plain.items() if k not in NOT_RESULT}
    log.info("%s: rank %d of world_size %d", run_dir, rank(), world_size())
    with contextlib.ExitStack() as stack:  # rank 0 holds the run for the whole job; the other ranks follow its outcome
        state = on_rank0(lambda: _claim(stack, rd, identity), doing="training")
        if state == "busy":  # TOOLSENSE_BUSY=skip: another process holds the run (holding names it)
            return None
        if state == "finished":
            log.info("%s: trained and evaluated earlier under this config (done.json); skipped. Delete %s to redo "
                     "what is missing", run_dir, rd.done_path)
            return None
        loss = train_and_evaluate(cfg, run_dir, prepared, plan)
        rd.mark_finished(identity)
        return loss


def _claim(stack: contextlib.ExitStack, rd: RunDir, identity: Mapping[str, Any]) -> str:
    """Rank 0's claim of the run, held until ``stack`` closes: ``busy`` (another process holds it
    and TOOLSENSE_BUSY=skip), ``finished`` (its done.json matches) or ``held``."""
    if not stack.enter_context(holding(rd.path, "training")):
        return "busy"
    return "finished" if rd.finished(dict(identity)) else "held"


def evaluation_plan(cfg: TrainConfig, run_dir: str | Path) -> list:
    """evaluate.py's typed config (``EvaluateConfig``) of every evaluation after training, composed
    once, before training: each stage of ``evaluate.stages`` (stage2 into ``<run>/eval``, stage1 into
    ``<run>/eval/stage1``) with ``evaluate.suite``, ``evaluate.overrides`` and that stage's
    ``evaluate.stage_overrides``, then the drift into ``<run>/eval/drift``; [] when none is asked for.
    The leakage refusal reads the same configs the evaluation runs."""
    ev, run_dir = cfg.evaluate, Path(run_dir)
    if ev.suite is None and not ev.overrides and not ev.drift:
        return []
    from toolsense.evaluation.config import compose_evaluate

    overrides = list(ev.overrides)
    if cfg.logger.kind == "wandb" and not any(o.startswith("logger") for o in overrides):  # W&B for eval too
        overrides.insert(0, "logger=wandb")
    plan = []
    for stage in ev.stages if ev.suite is not None or ev.overrides else ():
        out = run_dir / "eval" if stage == "stage2" else run_dir / "eval" / stage
        plan.append(compose_evaluate([f"run={run_dir}", f"stage={stage}", f"output_dir={out}",
                                      *([f"suite={ev.suite}"] if ev.suite else []), *overrides,
                                      *ev.stage_overrides.get(stage, ())]))
    if ev.drift:
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
