"""Model loading: embedded defaults (SmolLM2-135M, Gemma-3-270M, tiny_random) and any HF id/path.

The names below load on first use (``utils/lazy.py``): importing ``toolsense.models.config`` loads no torch."""

from typing import TYPE_CHECKING

from toolsense.utils.lazy import lazy_exports

if TYPE_CHECKING:
    from toolsense.models.config import ModelConfig
    from toolsense.models.loading import EmbeddingMatrices, default_device, load_model_and_tokenizer, read_embeddings, resolve_model_dir

__getattr__, __dir__ = lazy_exports(__name__, {
    "config": ["ModelConfig"],
    "loading": ["EmbeddingMatrices", "default_device", "load_model_and_tokenizer", "read_embeddings",
                "resolve_model_dir"],
})

__all__ = ["EmbeddingMatrices", "ModelConfig", "default_device", "load_model_and_tokenizer", "read_embeddings", "resolve_model_dir"]
