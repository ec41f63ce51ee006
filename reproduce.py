"""Reproduce the paper's findings: train and evaluate its configurations, then write the report.

    python reproduce.py                          # study=cpu (make reproduce): docs/reports/reproduction.md
    python reproduce.py train=false              # rebuild the report from results under root
    python reproduce.py only=[grid]              # train one sweep of the study
"""

import hydra
from omegaconf import DictConfig

from toolsense.study.config import StudyConfig, register_configs
from toolsense.study.run import run_study
from toolsense.utils.config import to_config

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="reproduce")
def main(dict_cfg: DictConfig) -> None:
    run_study(to_config(StudyConfig, dict_cfg))


if __name__ == "__main__":
    main()
