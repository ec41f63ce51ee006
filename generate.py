"""Generate diagnostic benchmarks (RRB, MCQ, QA) from a catalog with an LLM.

    python generate.py                                   # demo catalog, embedded SmolLM2 writes and judges
    python generate.py catalog=toolsense_release writer.backend=openai writer.openai_model=gpt-4o-mini
"""

import hydra
from omegaconf import DictConfig, OmegaConf

from toolsense.generation.config import GenerateConfig
from toolsense.utils.hydra import register_schema

register_schema("generate_schema", GenerateConfig)


@hydra.main(version_base="1.3", config_path="conf", config_name="generate")
def main(cfg: DictConfig) -> None:
    from toolsense.generation.runner import run

    summary = run(OmegaConf.to_object(cfg))
    print(OmegaConf.to_yaml(OmegaConf.create(summary)))


if __name__ == "__main__":
    main()
