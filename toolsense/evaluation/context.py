"""The model under evaluation: a training run directory, or an untrained base model with the
index tokens added fresh (the baseline a trained run is compared against).

Run directory contract (written by ``train.py``)::

    <run>/config.yaml   resolved config with model, catalog, index, prompts sections
    <run>/index.json    ToolIndex.save(...)
    <run>/stage1/ <run>/stage2/   HF model folders (LoRA merged) with the virtual tokens
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from toolsense.catalog import Catalog
from toolsense.catalog.config import CatalogConfig, load_from_config
from toolsense.data.prompts import PromptConfig
from toolsense.index import ToolIndex, add_index_tokens, build_trie
from toolsense.index.config import IndexConfig, index_from_config
from toolsense.models import ModelConfig, load_model_and_tokenizer
from toolsense.models.encoders import encoder_embeddings
from toolsense.utils.io import sha256_file, sha256_text

log = logging.getLogger(__name__)


def from_section(cls, section: Any, where: str, strict: bool = False):
    """A config dataclass from a mapping. Lenient (default) keeps only the fields ``cls``
    declares — a run's config may carry training-only keys; ``strict`` rejects unknown keys
    naming them (typos in our own config)."""
    if section is None:
        return cls()
    if not hasattr(section, "items"):
        raise ValueError(f"{where}: expected a mapping, got {type(section).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(section) - names)
    if strict and unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}; known: {sorted(names)}")
    return cls(**{k: v for k, v in dict(section).items() if k in names})


@dataclass
class EvalModel:
    """Everything retrieval and probes need about the model being evaluated."""

    model: Any
    tokenizer: Any
    index: ToolIndex
    catalog: Catalog
    prompts: PromptConfig
    source: dict[str, Any]  # where it came from (run dir, stage, model name), for results.json
    index_sha256: str

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def trie(self):
        return build_trie(self.index, self.tokenizer)


def pick_device(device: Optional[str]) -> torch.device:
    """The configured device, else this process's GPU (``cuda:<LOCAL_RANK>`` under torchrun), else CPU."""
    from toolsense.evaluation.distributed import local_device

    return torch.device(device or local_device())


def load_run(run_dir: str | Path, stage: str = "stage2", device: Optional[str] = None,
             dtype: Optional[str] = None) -> EvalModel:
    """Load ``<run>/<stage>`` with the run's own model, catalog, index and prompt sections."""
    from omegaconf import OmegaConf

    run = Path(run_dir)
    cfg_path = run / "config.yaml"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{cfg_path}: no such file (is {run} a training run directory?)")
    if not (run / stage / "config.json").is_file():
        raise FileNotFoundError(f"{run / stage}: no model folder for stage {stage!r}")
    raw = OmegaConf.to_container(OmegaConf.load(cfg_path), resolve=True)
    mcfg = from_section(ModelConfig, raw.get("model"), f"{cfg_path}: model")
    if dtype:
        mcfg.dtype = dtype
    catalog = load_from_config(from_section(CatalogConfig, raw.get("catalog"), f"{cfg_path}: catalog"))
    index = ToolIndex.load(run / "index.json", catalog)
    prompts = from_section(PromptConfig, raw.get("prompts"), f"{cfg_path}: prompts")
    model, tok = load_model_and_tokenizer(mcfg, path=run / stage, device=pick_device(device))
    model.eval()
    source = {"run": str(run), "stage": stage, "model": mcfg.name_or_path}
    return EvalModel(model, tok, index, catalog, prompts, source, sha256_file(run / "index.json"))


def load_untrained(model_cfg: ModelConfig, catalog_cfg: CatalogConfig, index_cfg: IndexConfig,
                   prompts: Optional[PromptConfig] = None, device: Optional[str] = None) -> EvalModel:
    """A base model with the index's tokens added (mean-of-sub-token init) and no training."""
    catalog = load_from_config(catalog_cfg)
    index = index_from_config(index_cfg, catalog, lambda: encoder_embeddings(catalog, index_cfg.encoder))
    model, tok = load_model_and_tokenizer(model_cfg, device=pick_device(device))
    add_index_tokens(index, model, tok)
    model.eval()
    source = {"run": None, "stage": "untrained", "model": model_cfg.name_or_path}
    return EvalModel(model, tok, index, catalog, prompts or PromptConfig(), source,
                     sha256_text(json.dumps(index.to_dict(), sort_keys=True, ensure_ascii=False)))
