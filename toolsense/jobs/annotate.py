"""Human agreement on benchmark items: blind rating sheets, then Fleiss' kappa from the filled ones.

    toolsense-annotate benchmark=demo_mcq annotate.items=100 annotate.raters=3   # <out>/mcq_sheet.csv + mcq_key.csv
    toolsense-annotate task=kappa annotate.sheets=[mcq_filled.csv,qa_filled.csv]  # <out>/kappa.md, kappa.json
"""

import sys

import hydra
from omegaconf import DictConfig

from toolsense.comparison.annotate import AnnotateJobConfig, register_configs, run
from toolsense.utils.config import to_config
from toolsense.utils.hydra import hydra_errors, shared_output_dir, take_debug, user_errors

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="annotate")
def job(dict_cfg: DictConfig) -> None:
    with user_errors():
        cfg = to_config(AnnotateJobConfig, dict_cfg)
        run(cfg, output_dir=shared_output_dir(cfg.output_dir))


def main() -> None:
    sys.argv[1:] = take_debug(sys.argv[1:])
    with hydra_errors():
        job()


if __name__ == "__main__":
    main()
