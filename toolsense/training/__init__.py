"""Two-stage training: Stage 1 memorization, Stage 2 retrieval SFT, LoRA or full, on TRL.

The names below load on first use (``utils/lazy.py``): importing ``toolsense.training.config`` loads no torch."""

from typing import TYPE_CHECKING

from toolsense.utils.lazy import lazy_exports

if TYPE_CHECKING:
    from toolsense.training.config import TrainConfig, register_configs, to_train_config
    from toolsense.training.runner import Prepared, prepare, run

__getattr__, __dir__ = lazy_exports(__name__, {
    "config": ["TrainConfig", "register_configs", "to_train_config"],
    "runner": ["Prepared", "prepare", "run"],
})

__all__ = ["Prepared", "TrainConfig", "prepare", "register_configs", "run", "to_train_config"]
