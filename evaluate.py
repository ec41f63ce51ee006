"""Evaluate a trained run (or an untrained base model) on retrieval benchmarks, probes and baselines.

    python evaluate.py run=<run dir> suite=demo               # the demo table
    python evaluate.py run=<run dir> benchmark=rrb benchmark.path=<released rrb.jsonl> baseline=bm25
    python evaluate.py model=smollm2_135m catalog=demo index=flat   # untrained baseline
    python evaluate.py run=<run dir> task=drift               # embedding drift base -> stage1 -> stage2
    python evaluate.py task=compare compare.roots=[<sweep dir>]   # one table (+ csv, plots) over results.json files
    python evaluate.py task=annotate benchmark=mcq             # a rating sheet; task=kappa annotate.sheets=[...]: Fleiss' kappa
"""

import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from toolsense.evaluation.runner import run
    from toolsense.utils.hydra import shared_output_dir

    given = any(o.startswith("output_dir=") for o in HydraConfig.get().overrides.task)
    run(cfg, output_dir=shared_output_dir(cfg.output_dir if given else None))


if __name__ == "__main__":
    main()
