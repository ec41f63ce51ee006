"""Tool-trace audit (PT2D, dilution sweeps, token-class redaction).

    python audit.py data.path=traces.jsonl audit/scorer=precomputed scorer.path=scores.jsonl
    python audit.py audit/mode=demo   # synthetic traces, LoRA SmolLM2, full audit (make audit-demo)
"""

import hydra
from omegaconf import DictConfig

from toolsense.audit import AuditConfig, register_configs, run, sweep_metric
from toolsense.utils.config import to_config

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="audit")
def main(cfg: DictConfig) -> float:
    return sweep_metric(run(to_config(AuditConfig, cfg)))


if __name__ == "__main__":
    main()
