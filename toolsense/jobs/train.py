"""Train a Stage-1 (memorization) and Stage-2 (retrieval) model into one run directory.

    toolsense-train experiment=tg_3fm tuning=lora                      # or: python train.py ...
    toolsense-train experiment=tg model=tiny_random stage1.max_steps=2 stage2.max_steps=2 output_dir=outputs/x
    toolsense-train -m experiment=tg,tg_3fm tuning=lora,full evaluate.suite=demo  # train, evaluate, one table
    toolsense-train ... evaluate.benchmarks.rrb=rrb evaluate.baselines.bm25=bm25   # the evaluation after training, typed

One process trains a run directory at a time; a run finished under the same settings is skipped
(toolsense/pipeline.py says how).
"""

import sys

import hydra
from omegaconf import DictConfig

from toolsense.training.config import TrainConfig, register_configs
from toolsense.utils.config import to_config
from toolsense.utils.hydra import hydra_errors, take_debug, user_errors

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="train")
def job(dict_cfg: DictConfig) -> float | None:
    with user_errors():
        from toolsense.pipeline import train  # the trainer loads once the config is checked (--help stays fast)

        return train(to_config(TrainConfig, dict_cfg))


def main() -> None:
    sys.argv[1:] = take_debug(sys.argv[1:])
    with hydra_errors():
        job()


if __name__ == "__main__":
    main()
