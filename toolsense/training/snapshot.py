"""A Trainer checkpoint of a stage exported as a plain model folder, so that it can be evaluated.

A stage keeps Trainer checkpoints (``checkpoints/<stage>/checkpoint-<N>``, every ``trainer.save_steps``
optimiser steps, ``trainer.save_total_limit`` of them) to resume from. Under LoRA a checkpoint holds the
adapters (``adapter_model.safetensors``) and the trained embedding rows (``embedding_rows.pt``), not a
model: :func:`export_checkpoint` rebuilds the stage's starting model (the base model, or Stage 1's
folder for Stage 2), adds the index's tokens, puts the checkpoint's adapters and rows in, merges
as the stage's own ``save`` does (training/stage.py, ``Trainable.merged``) and writes
``snapshots/<stage>-<N>`` through a ``.tmp`` folder renamed into place (a folder that exists is
complete). Under full fine-tuning the checkpoint is the model and is re-saved as it is. The export of
a stage's last checkpoint equals the stage's own folder: a learning curve is read from one run's
checkpoints (``evaluate.py run=<dir> stage=stage2 checkpoint=<N>``) instead of a run per point.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path

from toolsense.catalog.config import load_from_config
from toolsense.index import ToolIndex, add_index_tokens
from toolsense.models import load_model_and_tokenizer
from toolsense.models.loading import resolve_dtype
from toolsense.utils.errors import MissingFile
from toolsense.utils.rundir import RunDir

log = logging.getLogger(__name__)

ADAPTER_FILE = "adapter_model.safetensors"


def checkpoint_epoch(ckpt: Path) -> float | None:
    """The epoch a checkpoint was saved at (its trainer_state.json), None when it does not say."""
    try:
        return float(json.loads((ckpt / "trainer_state.json").read_text(encoding="utf-8"))["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def export_checkpoint(run_dir: str | Path, stage: str, step: int) -> Path:
    """``<run>/snapshots/<stage>-<step>`` from ``<run>/checkpoints/<stage>/checkpoint-<step>`` (see the
    module doc); an existing snapshot is returned as it is. A missing or incomplete checkpoint, or one
    whose files do not fit the run's config, is refused naming the file."""
    from toolsense.training.config import to_train_config
    from toolsense.training.stage import stage_done

    rd = RunDir(run_dir).require()
    out = rd.snapshot(stage, step)
    if stage_done(out):
        return out
    ckpt = rd.checkpoint(stage, step)
    if not (ckpt / "trainer_state.json").is_file():
        saved = sorted(p.name for p in ckpt.parent.glob("checkpoint-*")) if ckpt.parent.is_dir() else []
        raise MissingFile(f"{ckpt}: no complete checkpoint (no trainer_state.json); {stage} has {saved or 'none'} "
                                "(trainer.save_steps sets where they are saved, trainer.save_total_limit how many are kept)")
    cfg = to_train_config(rd.config())
    fp32 = dataclasses.replace(cfg.model, dtype="float32")  # merged in fp32, saved in the run's dtype (as Stage.save)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if cfg.tuning.method == "full":
        model, tok = load_model_and_tokenizer(fp32, path=str(ckpt), device=None)
    else:
        model, tok = _merged_lora(cfg, rd, stage, ckpt, fp32)
    model.to(resolve_dtype(str(cfg.model.dtype))).save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(out)
    log.info("exported %s into %s", ckpt, out)
    return out


def _merged_lora(cfg, rd: RunDir, stage: str, ckpt: Path, fp32):
    """The stage's starting model with the checkpoint's adapters and embedding rows, merged."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    from toolsense.training.trainer import restore_embedding_rows
    from toolsense.training.tuning import prepare_trainable

    if not (ckpt / ADAPTER_FILE).is_file():
        raise MissingFile(f"{ckpt / ADAPTER_FILE}: no such file (a LoRA checkpoint holds its adapters there)")
    init = None if stage == "stage1" else (str(rd.stage("stage1")) if cfg.stage1.enabled else cfg.stage2.init_from)
    model, tok = load_model_and_tokenizer(fp32, path=init, device=None)
    index = ToolIndex.load(rd.index_path, load_from_config(cfg.catalog))
    ids = add_index_tokens(index, model, tok)
    trainable = prepare_trainable(model, cfg.tuning, ids, upcast=True)
    state = load_file(str(ckpt / ADAPTER_FILE))
    result = set_peft_model_state_dict(trainable.model, state)
    unexpected = list(getattr(result, "unexpected_keys", None) or [])
    if unexpected or not state:
        raise ValueError(f"{ckpt / ADAPTER_FILE}: {len(state)} tensors, {len(unexpected)} not adapters of this run's "
                         f"model (e.g. {unexpected[:2]}): the checkpoint is not of this run's config")
    if not restore_embedding_rows(trainable, ckpt):
        raise MissingFile(f"{ckpt}: no embedding_rows.pt (the trained embedding rows a LoRA checkpoint holds)")
    return trainable.merged(), tok
