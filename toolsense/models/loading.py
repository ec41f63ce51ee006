"""Load a causal LM and its tokenizer with the EOS and chat template made explicit."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from toolsense.models.config import ModelConfig
from toolsense.models.embedded import EMBEDDED, embedded_dir

log = logging.getLogger(__name__)


def resolve_model_dir(cfg: ModelConfig) -> str:
    """Embedded name → its cached folder; anything else is passed through (path or hub id)."""
    if cfg.name_or_path in EMBEDDED:
        return str(embedded_dir(cfg.name_or_path, cfg.cache_dir))
    return cfg.name_or_path


def resolve_dtype(name: str) -> torch.dtype:
    if name == "auto":
        if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def default_device() -> str:
    """Where a model or encoder runs when no device is configured: this process's GPU
    (``cuda:<LOCAL_RANK>`` under torchrun, else ``cuda``) when CUDA is present, else ``cpu``."""
    import os

    if not torch.cuda.is_available():
        return "cpu"
    return f"cuda:{os.environ['LOCAL_RANK']}" if "LOCAL_RANK" in os.environ else "cuda"


def load_tokenizer(cfg: ModelConfig, path: str | None = None):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path or resolve_model_dir(cfg), trust_remote_code=cfg.trust_remote_code)
    if cfg.chat_template:
        tok.chat_template = cfg.chat_template
    if cfg.eos_token:
        if tok.convert_tokens_to_ids(cfg.eos_token) in (None, tok.unk_token_id):
            raise ValueError(f"model.eos_token={cfg.eos_token!r} is not a token of {cfg.name_or_path}")
        tok.eos_token = cfg.eos_token
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not tok.chat_template:
        raise ValueError(f"{cfg.name_or_path} has no chat template; set model.chat_template in its config")
    return tok


def load_model_and_tokenizer(cfg: ModelConfig, path: str | Path | None = None, device: str | torch.device | None = None):
    """Returns ``(model, tokenizer)``. ``path`` overrides where weights are read from (e.g. a
    Stage-1 checkpoint) while the model section still decides EOS, template and dtype."""
    from transformers import AutoModelForCausalLM

    src = str(path) if path is not None else resolve_model_dir(cfg)
    tok = load_tokenizer(cfg, src)
    kwargs = {"dtype": resolve_dtype(str(cfg.dtype)), "trust_remote_code": cfg.trust_remote_code}
    if cfg.attn_implementation:
        kwargs["attn_implementation"] = cfg.attn_implementation
    model = AutoModelForCausalLM.from_pretrained(src, **kwargs)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    if device is not None:
        model.to(device)
    return model, tok
