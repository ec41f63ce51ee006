"""Train a Stage-1 (memorization) and Stage-2 (retrieval) model into one run directory.

    python train.py experiment=tg_3fm tuning=lora
    python train.py experiment=tg model=tiny_random stage1.max_steps=2 stage2.max_steps=2 output_dir=outputs/smoke
    python train.py -m experiment=tg,tg_3fm tuning=lora,full evaluate.suite=demo   # ablation: train, evaluate, one table

One process trains a run directory at a time; a run finished under the same config is skipped
(toolsense/pipeline.py says how).
"""

import hydra
from omegaconf import DictConfig

from toolsense.pipeline import train
from toolsense.training import TrainConfig, register_configs
from toolsense.utils.config import to_config, to_plain

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(dict_cfg: DictConfig) -> float | None:
    return train(to_config(TrainConfig, dict_cfg), to_plain(dict_cfg))


if __name__ == "__main__":
    main()
