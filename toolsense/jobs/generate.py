"""Generate diagnostic benchmarks (RRB, MCQ, QA) from a catalog with an LLM.

    toolsense-generate                                   # demo catalog, embedded SmolLM2 writes and judges
    toolsense-generate catalog=toolsense_release writer.backend=openai writer.openai_model=gpt-4o-mini
    toolsense-generate judge=openai judge.openai_model=gpt-4o judge.base_url=http://127.0.0.1:8000/v1   # another judge
    TOOLSENSE_BUSY=wait toolsense-generate ...   # another process holds the folder: wait (skip: move on; else stop)
"""

import os
import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from toolsense.generation.config import GenerateConfig, check_judge_overrides, register_configs
from toolsense.generation.outputs import nothing_made
from toolsense.generation.runner import run
from toolsense.tracking import log_job_summary
from toolsense.utils.config import as_plain, to_config
from toolsense.utils.hydra import hydra_errors, take_debug, user_errors

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="generate")
def job(dict_cfg: DictConfig) -> None:
    with user_errors():
        cfg = to_config(GenerateConfig, dict_cfg)
        summary = run(cfg)
        if summary.get("skipped"):  # TOOLSENSE_BUSY=skip and another process holds the folder
            print(f"skipped {summary['output_dir']}: busy ({summary['holder']})")
            return
        log_job_summary(cfg.logger, summary, prefix="gen", out=summary["output_dir"], config=as_plain(cfg),
                        job_type="generate")
        print(OmegaConf.to_yaml(OmegaConf.create(summary)))
        why = nothing_made(summary)
        if why:  # an empty benchmark is a failure, said in one line; a partial run exits 0 with its counts
            sys.exit(f"{os.path.basename(sys.argv[0])}: {why}")  # generate.py or toolsense-generate


def main() -> None:
    with user_errors():
        check_judge_overrides(sys.argv[1:])
    sys.argv[1:] = take_debug(sys.argv[1:])
    with hydra_errors():
        job()


if __name__ == "__main__":
    main()
