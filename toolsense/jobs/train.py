"""Train a Stage-1 (memorization) and Stage-2 (retrieval) model into one run directory.

    toolsense-train experiment=tg_3fm tuning=lora                      # or: python train.py ...
    toolsense-train experiment=tg model=tiny_random stage1.max_steps=2 stage2.max_steps=2 output_dir=outputs/x
    toolsense-train -m experiment=tg,tg_3fm tuning=lora,full evaluate.suite=demo  # train, evaluate, one table
    toolsense-train ... evaluate.overrides=[benchmark=rrb,baseline=bm25]   # evaluate.py overrides, no quotes needed

One process trains a run directory at a time; a run finished under the same config is skipped
(toolsense/pipeline.py says how).
"""

import sys

import hydra
from omegaconf import DictConfig

from toolsense.pipeline import train
from toolsense.training import TrainConfig, register_configs
from toolsense.utils.compose import quote_list_overrides
from toolsense.utils.config import to_config, to_plain
from toolsense.utils.hydra import take_debug, user_errors

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="train")
def job(dict_cfg: DictConfig) -> float | None:
    with user_errors():
        return train(to_config(TrainConfig, dict_cfg), to_plain(dict_cfg))


def main() -> None:
    sys.argv[1:] = quote_list_overrides(take_debug(sys.argv[1:]))
    job()


if __name__ == "__main__":
    main()
