"""Reproduce the paper's findings: train and evaluate its configurations, then write the report.

    toolsense-reproduce                          # study=cpu (make reproduce): docs/reports/reproduction.md
    toolsense-reproduce train=false              # rebuild the report from results under root
    toolsense-reproduce only=[grid]              # train one sweep of the study
"""

import sys

import hydra
from omegaconf import DictConfig

from toolsense.study.config import StudyConfig, register_configs
from toolsense.study.run import run_study
from toolsense.utils.config import to_config
from toolsense.utils.hydra import hydra_errors, take_debug, user_errors

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="reproduce")
def job(dict_cfg: DictConfig) -> None:
    with user_errors():
        run_study(to_config(StudyConfig, dict_cfg))


def main() -> None:
    sys.argv[1:] = take_debug(sys.argv[1:])
    with hydra_errors():
        job()


if __name__ == "__main__":
    main()
