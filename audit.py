"""Tool-trace audit (PT2D, dilution sweeps, token-class redaction).

    python audit.py data.path=traces.jsonl audit/scorer=precomputed scorer.path=scores.jsonl
    python audit.py demo            # = python audit.py audit/mode=demo: synthetic traces, LoRA SmolLM2, full audit
"""

import sys

import hydra
from omegaconf import DictConfig


@hydra.main(config_path="conf", config_name="audit", version_base="1.3")
def main(cfg: DictConfig) -> float:
    from toolsense.audit.run import run_from_hydra

    return run_from_hydra(cfg)


if __name__ == "__main__":
    # `python audit.py demo` is shorthand for the Hydra override `audit/mode=demo`.
    sys.argv = [("audit/mode=demo" if a == "demo" else a) for a in sys.argv]
    main()
