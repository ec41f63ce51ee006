"""The model under evaluation: a training run directory, or an untrained base model with the
index tokens added fresh (the baseline a trained run is compared against).

A run directory is read through :class:`~toolsense.utils.rundir.RunDir` (its layout is
documented there).
"""

from __future__ import annotations

import json
import logging
import os
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
from toolsense.utils.errors import ConfigError, MissingFile
from toolsense.utils.io import sha256_text
from toolsense.utils.rundir import RunDir

log = logging.getLogger(__name__)


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
             dtype: Optional[str] = None, attn_implementation: Optional[str] = None,
             checkpoint: Optional[int] = None) -> EvalModel:
    """Load ``<run>/<stage>`` with the run's own model, catalog, index and prompt sections;
    ``dtype`` / ``attn_implementation`` (evaluate.py's ``model.attn_implementation=``) replace
    the run's (a run trained under flash attention need not be evaluated under it). ``checkpoint``:
    the snapshot exported from that Trainer checkpoint of ``stage`` (training/snapshot.py) instead."""
    rd = RunDir(run_dir).require(stage if checkpoint is None else None)
    folder = rd.model_folder(stage, checkpoint)
    if not (folder / "config.json").is_file():
        raise MissingFile(f"{folder}: no model folder (evaluate.py checkpoint={checkpoint} exports it from "
                                f"{rd.checkpoint(stage, checkpoint or 0)} first)")
    mcfg = rd.section("model", ModelConfig)
    if dtype:
        mcfg.dtype = dtype
    if attn_implementation:
        mcfg.attn_implementation = attn_implementation
    catalog = load_from_config(rd.section("catalog", CatalogConfig))
    index = ToolIndex.load(rd.index_path, catalog)
    prompts = rd.section("prompts", PromptConfig)
    model, tok = load_model_and_tokenizer(mcfg, path=folder, device=pick_device(device))
    model.eval()
    source = {"run": str(rd.path), "stage": stage, "model": mcfg.name_or_path,
              **({"checkpoint": checkpoint} if checkpoint is not None else {})}
    return EvalModel(model, tok, index, catalog, prompts, source, rd.index_sha256())


def load_untrained(model_cfg: ModelConfig, catalog_cfg: CatalogConfig, index_cfg: IndexConfig,
                   prompts: Optional[PromptConfig] = None, device: Optional[str] = None) -> EvalModel:
    """A base model with the index's tokens added (mean-of-sub-token init) and no training; or a
    released ToolGen-style checkpoint (``model.name_or_path=<its folder>``) whose tokenizer already
    holds every index token: those tokens, rows, EOS and chat template are its own and reused as
    they are (no token added, no resize; ``stage: checkpoint``). A tokenizer holding only some of
    them is an error: the catalog / index do not match that checkpoint."""
    catalog = load_from_config(catalog_cfg)
    index = index_from_config(index_cfg, catalog, lambda: encoder_embeddings(catalog, index_cfg.encoder))
    model, tok = load_model_and_tokenizer(model_cfg, device=pick_device(device))
    stage = _index_tokens_state(index, tok, model_cfg.name_or_path)
    if stage == "untrained":
        add_index_tokens(index, model, tok)
    model.eval()
    source = {"run": None, "stage": stage, "model": model_cfg.name_or_path}
    return EvalModel(model, tok, index, catalog, prompts or PromptConfig(), source,
                     sha256_text(json.dumps(index.to_dict(), sort_keys=True, ensure_ascii=False)))


def _index_tokens_state(index: ToolIndex, tokenizer, name: str) -> str:
    """``checkpoint`` when the tokenizer holds every index token already (a released ToolGen
    model), ``untrained`` when it holds none; some but not all is a ValueError naming the counts."""
    vocab = tokenizer.get_vocab()
    tokens = index.tokens()
    have = [t for t in tokens if t in vocab]
    if len(have) == len(tokens):
        log.info("%s already holds all %d index tokens: reusing its rows (no resize)", name, len(tokens))
        return "checkpoint"
    if have:
        missing = next(t for t in tokens if t not in vocab)
        raise ConfigError(f"model.name_or_path={name}: its tokenizer holds {len(have)} of the {len(tokens)} index tokens "
                          f"(missing e.g. {missing!r}); a checkpoint with tool tokens must hold them all: set catalog= / "
                          "index= to the ones it was trained on (catalog=toolbench_tokens index=flat for ToolGen)")
    return "untrained"


def portable_source(source: dict[str, Any], results_dir: str | Path) -> dict[str, Any]:
    """``source`` as a result written into ``results_dir`` records it: the run directory relative
    to that folder (``../../..`` for ``<run>/eval/<bench>/<system>/``), never an absolute path of
    this machine, so results moved or unpacked elsewhere still find their run (runs.run_dir_of)."""
    if not source.get("run"):
        return dict(source)
    rel = os.path.relpath(Path(source["run"]).resolve(), Path(results_dir).resolve())
    return {**source, "run": Path(rel).as_posix()}
