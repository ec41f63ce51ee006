"""Evaluate a trained run (or an untrained base model) on retrieval benchmarks, probes and baselines.

    python evaluate.py run=<run dir> suite=demo               # the demo table
    python evaluate.py run=<run dir> benchmark=rrb benchmark.path=<released rrb.jsonl> baseline=bm25
    python evaluate.py model=smollm2_135m catalog=demo index=flat   # untrained baseline
    python evaluate.py run=<run dir> task=drift               # embedding drift base -> stage1 -> stage2

Tables over many evaluations: python compare.py roots=[...]; rater sheets and kappa: python annotate.py.

One process evaluates into an output_dir at a time (its .lock): a second is refused naming the
holder (pid, host), or with TOOLSENSE_BUSY=wait waits for it, with TOOLSENSE_BUSY=skip does nothing.
"""

import hydra
from omegaconf import DictConfig

from toolsense.evaluation.config import EvaluateConfig, register_configs
from toolsense.evaluation.runner import run
from toolsense.utils.config import to_config
from toolsense.utils.hydra import shared_output_dir

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(dict_cfg: DictConfig) -> None:
    cfg = to_config(EvaluateConfig, dict_cfg)
    run(cfg, output_dir=shared_output_dir(cfg.output_dir))


if __name__ == "__main__":
    main()
