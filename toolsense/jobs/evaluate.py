"""Evaluate a trained run (or an untrained base model) on retrieval benchmarks, probes and baselines.

    toolsense-evaluate run=<run dir> suite=demo               # the demo table (or: python evaluate.py ...)
    toolsense-evaluate run=<run dir> benchmark=rrb benchmark.path=<released rrb.jsonl> baseline=bm25
    toolsense-evaluate model=smollm2_135m catalog=demo index=flat   # untrained baseline
    toolsense-evaluate run=<run dir> task=drift               # embedding drift base -> stage1 -> stage2
    toolsense-evaluate run=<run dir> stage=stage2 checkpoint=150 suite=demo   # a Trainer checkpoint of Stage 2

Tables over many evaluations: toolsense-compare roots=[...]; rater sheets and kappa: toolsense-annotate.

One process evaluates into an output_dir at a time (its .lock): a second is refused naming the
holder (pid, host), or with TOOLSENSE_BUSY=wait waits for it, with TOOLSENSE_BUSY=skip does nothing.
"""

import sys

import hydra
from omegaconf import DictConfig

from toolsense.evaluation.config import EvaluateConfig, catalog_group, register_configs
from toolsense.utils.config import to_config
from toolsense.utils.hydra import hydra_errors, shared_output_dir, take_debug, user_errors
from toolsense.utils.secrets import scrubbed_job

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="evaluate")
def job(dict_cfg: DictConfig) -> None:
    from toolsense.pipeline import evaluate  # the model code loads once the config is checked (--help stays fast)

    with user_errors(), scrubbed_job(["OPENAI_API_KEY"]):  # baseline=openai; an endpoint may echo the key in its error
        cfg = to_config(EvaluateConfig, dict_cfg)
        evaluate(cfg, output_dir=shared_output_dir(cfg.output_dir))


def main() -> None:
    sys.argv[1:] = catalog_group(take_debug(sys.argv[1:]))
    with hydra_errors():
        job()


if __name__ == "__main__":
    main()
