"""Model loading: embedded defaults (SmolLM2-135M, Gemma-3-270M, tiny_random) and any HF id/path."""

from toolsense.models.config import ModelConfig
from toolsense.models.loading import EmbeddingMatrices, default_device, load_model_and_tokenizer, read_embeddings, resolve_model_dir

__all__ = ["EmbeddingMatrices", "ModelConfig", "default_device", "load_model_and_tokenizer", "read_embeddings", "resolve_model_dir"]
