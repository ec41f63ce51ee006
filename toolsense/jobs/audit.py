"""Tool-trace audit (PT2D, dilution sweeps, token-class redaction).

    toolsense-audit data.path=traces.jsonl audit/scorer=precomputed scorer.path=scores.jsonl
    toolsense-audit audit/mode=demo   # synthetic traces, LoRA SmolLM2, full audit (make audit-demo)
"""

import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from toolsense.audit.config import AuditConfig, register_configs
from toolsense.utils.config import to_config
from toolsense.utils.hydra import hydra_errors, take_debug, user_errors
from toolsense.utils.secrets import scrubbed_job

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="audit")
def job(cfg: DictConfig) -> float:
    from toolsense.audit.run import run, sweep_metric  # the scorers load once the config is checked (--help stays fast)

    # scorer=openai: an endpoint may echo the key in its error
    with user_errors(), scrubbed_job([OmegaConf.select(cfg, "scorer.api_key_env") or "OPENAI_API_KEY"]):
        return sweep_metric(run(to_config(AuditConfig, cfg)))


def main() -> None:
    sys.argv[1:] = take_debug(sys.argv[1:])
    with hydra_errors():
        job()


if __name__ == "__main__":
    main()
