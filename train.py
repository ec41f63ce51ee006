"""Train a Stage-1 (memorization) and Stage-2 (retrieval) model into one run directory.

    python train.py experiment=tg_3fm tuning=lora
    python train.py experiment=tg model=tiny_random stage1.max_steps=2 stage2.max_steps=2 output_dir=outputs/smoke
    python train.py -m experiment=tg,tg_3fm tuning=lora,full evaluate.suite=demo   # ablation: train, evaluate, one table
"""

import hydra
from omegaconf import DictConfig

from toolsense.training import register_configs, run
from toolsense.utils.hydra import shared_output_dir

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    run_dir = shared_output_dir(cfg.output_dir)
    summary = run(cfg, output_dir=run_dir)
    if cfg.evaluate.suite is not None or cfg.evaluate.overrides or cfg.evaluate.drift:
        from toolsense.evaluation.runner import evaluate_trained_run

        evaluate_trained_run(run_dir, cfg.evaluate.suite, list(cfg.evaluate.overrides), cfg.evaluate.drift)
    last = summary.get("stage2") or summary.get("stage1") or {}
    return last.get("train_loss")


if __name__ == "__main__":
    main()
