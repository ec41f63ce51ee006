"""Two-stage training: Stage 1 memorization, Stage 2 retrieval SFT, LoRA or full, on TRL."""

from toolsense.training.config import TrainConfig, register_configs, to_train_config
from toolsense.training.runner import Prepared, prepare, run

__all__ = ["Prepared", "TrainConfig", "prepare", "register_configs", "run", "to_train_config"]
