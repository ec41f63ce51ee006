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

import logging
from pathlib import Path
from typing import Any, Mapping

from toolsense.data.leakage import refuse_leakage
from toolsense.training import Prepared, TrainConfig, prepare, run
from toolsense.utils.hydra import shared_output_dir, sweep_name
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
    refuse_scored_queries(cfg, prepared)
    run_dir = shared_output_dir(cfg.output_dir)
    rd = RunDir(run_dir)
    identity = {k: v for k, v in plain.items() if k not in NOT_RESULT}
    with holding(Path(run_dir), "training") as held:
        if not held:  # TOOLSENSE_BUSY=skip: another process holds the run (holding names it)
            return None
        if rd.finished(identity):
            log.info("%s: trained and evaluated earlier under this config (done.json); skipped. Delete %s to redo "
                     "what is missing", run_dir, rd.done_path)
            return None
        loss = train_and_evaluate(cfg, run_dir, prepared)
        rd.mark_finished(identity)
        return loss


def refuse_scored_queries(cfg: TrainConfig, prepared: Prepared) -> None:
    """Stage 2 must not train on a query the run's evaluation scores (by normalised text, or id
    within one file): refused naming each source and benchmark file and the count."""
    if not prepared.sources:
        return
    from toolsense.evaluation.leakage import scored_query_sets  # composes the evaluation suite: only when Stage 2 has sources

    refuse_leakage(prepared.sources, scored_query_sets(cfg.evaluate.suite, list(cfg.evaluate.overrides), list(cfg.evaluate.stages),
                                                       {k: list(v) for k, v in cfg.evaluate.stage_overrides.items()}))


def train_and_evaluate(cfg: TrainConfig, run_dir: str, prepared: Prepared | None = None) -> float | None:
    summary = run(cfg, output_dir=run_dir, prepared=prepared)
    if cfg.evaluate.suite is not None or cfg.evaluate.overrides or cfg.evaluate.drift:
        from toolsense.evaluation.runner import evaluate_trained_run  # the evaluator loads only after training

        overrides = list(cfg.evaluate.overrides)
        if cfg.logger.kind == "wandb" and not any(o.startswith("logger") for o in overrides):  # W&B for eval too
            overrides.insert(0, "logger=wandb")
        evaluate_trained_run(run_dir, cfg.evaluate.suite, overrides, cfg.evaluate.drift, list(cfg.evaluate.stages),
                             {k: list(v) for k, v in cfg.evaluate.stage_overrides.items()})
    last = summary.get("stage2") or summary.get("stage1") or {}
    return last.get("train_loss")
