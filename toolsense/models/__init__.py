"""Model loading: embedded defaults (SmolLM2-135M, Gemma-3-270M, tiny_random) and any HF id/path."""

from toolsense.models.config import ModelConfig
from toolsense.models.loading import load_model_and_tokenizer, resolve_model_dir

__all__ = ["ModelConfig", "load_model_and_tokenizer", "resolve_model_dir"]
