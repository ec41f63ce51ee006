"""One ablation table over earlier evaluations: every results.json / drift.json under the roots.

    toolsense-compare roots=[multirun/<date>,outputs/<run>]     # comparison.md, .csv, .json, plots, report.html
    toolsense-compare roots=[<sweep dir>] 'metrics=[Rc@5,COMPc@5,Rprec_c]' output_dir=<dir>

Runs that differ only in trainer.seed are one row (pooled over seeds, clustered by item). A -m
sweep of train.py writes the same table into its sweep directory (CompareAfterSweep).
"""

import sys

import hydra
from omegaconf import DictConfig

from toolsense.comparison.compare import CompareConfig, register_configs, run
from toolsense.utils.config import to_config
from toolsense.utils.hydra import hydra_errors, shared_output_dir, take_debug, user_errors

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="compare")
def job(dict_cfg: DictConfig) -> None:
    with user_errors():
        cfg = to_config(CompareConfig, dict_cfg)
        run(cfg, output_dir=shared_output_dir(cfg.output_dir))


def main() -> None:
    sys.argv[1:] = take_debug(sys.argv[1:])
    with hydra_errors():
        job()


if __name__ == "__main__":
    main()
