"""Train a Stage-1 (memorization) and Stage-2 (retrieval) model into one run directory.

    python train.py experiment=tg_3fm tuning=lora
    python train.py experiment=tg model=tiny_random stage1.max_steps=2 stage2.max_steps=2 output_dir=outputs/smoke
    python train.py -m experiment=tg,tg_3fm tuning=lora,full evaluate.suite=demo   # ablation: train, evaluate, one table

A run directory is held by one process at a time (RunDir.claim); a second process aimed at it
stops with an error, or, with TOOLSENSE_BUSY=skip in its environment, skips that run: several
processes running one -m sweep then share its runs (reproduce.py's ``workers``).
"""

import logging
import os

import hydra
from omegaconf import DictConfig

from toolsense.training import TrainConfig, register_configs, run
from toolsense.utils.config import to_config
from toolsense.utils.hydra import shared_output_dir, sweep_name
from toolsense.utils.rundir import RunDir

log = logging.getLogger(__name__)

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(dict_cfg: DictConfig) -> float | None:
    cfg = to_config(TrainConfig, dict_cfg)
    cfg.logger.group = cfg.logger.group or sweep_name()  # a sweep is one W&B group; a single run's is its experiment
    run_dir = shared_output_dir(cfg.output_dir)
    with RunDir(run_dir).claim() as held:
        if held:
            return train_and_evaluate(cfg, run_dir)
    if os.environ.get("TOOLSENSE_BUSY") == "skip":
        log.info("%s: another process holds this run; skipped", run_dir)
        return None
    raise RuntimeError(f"{run_dir}: another process is training into this run directory (it holds {run_dir}/.lock); "
                       "wait for it, or set TOOLSENSE_BUSY=skip to skip busy runs of a sweep")


def train_and_evaluate(cfg: TrainConfig, run_dir: str) -> float | None:
    summary = run(cfg, output_dir=run_dir)
    if cfg.evaluate.suite is not None or cfg.evaluate.overrides or cfg.evaluate.drift:
        from toolsense.evaluation.runner import evaluate_trained_run

        overrides = list(cfg.evaluate.overrides)
        if cfg.logger.kind == "wandb" and not any(o.startswith("logger") for o in overrides):  # W&B for eval too
            overrides.insert(0, "logger=wandb")
        evaluate_trained_run(run_dir, cfg.evaluate.suite, overrides, cfg.evaluate.drift, list(cfg.evaluate.stages),
                             {k: list(v) for k, v in cfg.evaluate.stage_overrides.items()})
    last = summary.get("stage2") or summary.get("stage1") or {}
    return last.get("train_loss")


if __name__ == "__main__":
    main()
