"""Load a causal LM and its tokenizer with the EOS and chat template made explicit."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from toolsense.models.config import ModelConfig
from toolsense.models.embedded import EMBEDDED, embedded_dir
from toolsense.utils.errors import ConfigError

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
    (``cuda:<LOCAL_RANK>`` under torchrun, else the current one, index explicit: the Trainer
    compares a model's ``hf_device_map`` with its own ``cuda:0``) when CUDA is present, else ``cpu``."""
    import os

    if not torch.cuda.is_available():
        return "cpu"
    return f"cuda:{os.environ['LOCAL_RANK']}" if "LOCAL_RANK" in os.environ else f"cuda:{torch.cuda.current_device()}"


def load_tokenizer(cfg: ModelConfig, path: str | None = None):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path or resolve_model_dir(cfg), trust_remote_code=cfg.trust_remote_code)
    if cfg.chat_template:
        tok.chat_template = cfg.chat_template
    if cfg.eos_token:
        if tok.convert_tokens_to_ids(cfg.eos_token) in (None, tok.unk_token_id):
            raise ConfigError(f"model.eos_token={cfg.eos_token!r} is not a token of {cfg.name_or_path}")
        tok.eos_token = cfg.eos_token
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not tok.chat_template:
        raise ConfigError(f"{cfg.name_or_path} has no chat template; set model.chat_template in its config")
    return tok


def _from_pretrained(auto_cls, src: str, kwargs: dict):
    """``auto_cls.from_pretrained``, with a weights file that cannot be read (truncated by a full
    disk or a kill while copying) named in the error: safetensors' own message names no file."""
    from safetensors import SafetensorError

    try:
        return auto_cls.from_pretrained(src, **kwargs)
    except SafetensorError as e:
        files = sorted(p.name for p in Path(src).glob("*.safetensors")) if Path(src).is_dir() else []
        where = f"{src}/{files[0]}" if len(files) == 1 else f"{src} ({', '.join(files) or 'its .safetensors files'})"
        raise OSError(f"{where}: the model weights cannot be read ({e}); the file is truncated or corrupt: copy it "
                      "again, or delete the model folder and rerun the command that wrote it") from e


def load_model_and_tokenizer(cfg: ModelConfig, path: str | Path | None = None, device: str | torch.device | None = None):
    """Returns ``(model, tokenizer)``. ``path`` overrides where weights are read from (e.g. a
    Stage-1 checkpoint) while the model section still decides EOS, template and dtype."""
    from transformers import AutoModelForCausalLM

    src = str(path) if path is not None else resolve_model_dir(cfg)
    tok = load_tokenizer(cfg, src)
    kwargs = {"dtype": resolve_dtype(str(cfg.dtype)), "trust_remote_code": cfg.trust_remote_code}
    if cfg.attn_implementation:
        kwargs["attn_implementation"] = cfg.attn_implementation
    if device is not None and torch.device(device).type == "cuda":
        kwargs["device_map"] = str(device)  # weights go straight to the GPU: no full copy in host memory per rank
    model = _from_pretrained(AutoModelForCausalLM, src, kwargs)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    if device is not None:
        model.to(device)
    return model, tok


class EmbeddingMatrices(torch.nn.Module):
    """A checkpoint's input embedding and (untied) LM-head matrices alone, with the accessors of
    a causal LM (``get_input_embeddings().weight``, ``get_output_embeddings()``), so code that
    reads embeddings (drift) takes it in place of the model. Tied: one tensor for both."""

    def __init__(self, inp: torch.Tensor, out: torch.Tensor | None):
        super().__init__()
        self.embed = torch.nn.Embedding.from_pretrained(inp, freeze=True)
        self.head = None
        if out is not None:
            self.head = torch.nn.Linear(out.shape[1], out.shape[0], bias=False)
            self.head.weight = torch.nn.Parameter(out, requires_grad=False)

    def get_input_embeddings(self):
        return self.embed

    def get_output_embeddings(self):
        return self.head if self.head is not None else self.embed


def read_embeddings(folder: str | Path) -> EmbeddingMatrices | None:
    """The embedding matrices of a saved model folder read straight from its safetensors files
    (``*embed_tokens.weight``; ``*lm_head.weight`` when untied), in float32 — the rest of the
    checkpoint is never loaded (an 8B model in fp32 is 32 GB of host memory for two matrices).
    None when the folder has no safetensors or no such tensor (the caller loads the model)."""
    from safetensors import safe_open

    found: dict[str, torch.Tensor] = {}
    for f in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as h:
            for key in h.keys():
                if key.endswith("embed_tokens.weight") and "input" not in found:
                    found["input"] = h.get_tensor(key).float()
                elif key.endswith("lm_head.weight"):
                    found["output"] = h.get_tensor(key).float()
    if "input" not in found:
        return None
    import json

    cfg = json.loads((Path(folder) / "config.json").read_text()) if (Path(folder) / "config.json").is_file() else {}
    tied = cfg.get("tie_word_embeddings", (cfg.get("text_config") or {}).get("tie_word_embeddings", False))
    return EmbeddingMatrices(found["input"], None if tied else found.get("output"))
