"""One training stage as a small runner: ``setup / train / save / cleanup``.

A stage loads its starting model (the base model, or the previous stage's merged folder), adds
the index's virtual tokens, makes the configured parameters trainable, trains with SFTTrainer
(resuming from its last checkpoint when one exists) and saves a plain HF folder — LoRA merged,
tokenizer with the virtual tokens — by writing ``<name>.tmp`` and renaming it, so a stage
folder that exists is complete.
"""

from __future__ import annotations

import gc
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import torch

from toolsense.data.examples import Example, to_dataset
from toolsense.index import ToolIndex, add_index_tokens
from toolsense.models import load_model_and_tokenizer
from toolsense.models.loading import resolve_dtype
from toolsense.training.config import StageSchedule, TrainConfig
from toolsense.training.memory import device_memory, memory_plan, model_shape
from toolsense.training.preemption import StopFlag, StopOnSignal, preemptible
from toolsense.training.resume import (
    LOSS_FILE,
    LossTotalCallback,
    checkpoint_step,
    damaged_file,
    forget_logged_after,
    loss_sum_at,
    stage_loss,
    tokens_at,
)
from toolsense.training.trainer import (
    ROWS_FILE,
    EmbeddingRowsCallback,
    ToolsenseSFTTrainer,
    TrackerCallback,
    load_device,
    master_weights,
    plan_batch,
    release_deepspeed_state,
    restore_embedding_rows,
    sft_config,
    use_bf16,
    world_size,
)
from toolsense.training.tuning import Trainable, prepare_trainable

log = logging.getLogger(__name__)


def stage_done(path: Path) -> bool:
    return (path / "config.json").exists()


def last_checkpoint(folder: Path, needs: tuple[str, ...] = ()) -> Optional[str]:
    """The newest *complete* ``checkpoint-N`` under ``folder``, or None.

    A run killed while saving leaves a checkpoint folder without ``trainer_state.json`` (the
    Trainer writes it after the weights and optimizer) or without our own files (``needs``,
    written by a callback after that); a copy or a full disk may cut a file short
    (:func:`damaged_file`). Such a folder is skipped with a warning naming it (and the bad file),
    never deleted: the next save at that step overwrites it.
    """
    if not folder.is_dir():
        return None
    steps = sorted(((int(m.group(1)), p) for p in folder.iterdir()
                    if p.is_dir() and (m := re.fullmatch(r"checkpoint-(\d+)", p.name))), reverse=True)
    for _, path in steps:
        missing = [f for f in ("trainer_state.json", *needs) if not (path / f).exists()]
        damaged = None if missing else damaged_file(path)
        if not missing and not damaged:
            return str(path)
        log.warning("%s is %s; skipping it (resuming from the previous intact checkpoint)", path,
                    f"damaged ({damaged})" if damaged else f"incomplete (no {', '.join(missing)}), probably interrupted while saving")
    return None


@dataclass
class StageRunner:
    name: str
    """stage1 | stage2: the folder under the run directory and the metric namespace."""
    cfg: TrainConfig
    schedule: StageSchedule
    index: ToolIndex
    examples: list[Example]
    run_dir: Path
    init_path: Optional[str] = None
    """Model folder to start from; None = the configured base model."""
    tracker: Any = None
    trainable: Optional[Trainable] = field(default=None, init=False)
    trainer: Any = field(default=None, init=False)
    tokenizer: Any = field(default=None, init=False)
    result: dict = field(default_factory=dict, init=False)
    loss_total: Any = field(default=None, init=False)
    cut: dict = field(default_factory=dict, init=False)
    """Examples longer than ``trainer.max_length`` (``to_dataset``): in the summary as ``cut_by_max_length``."""
    late_signal: Optional[StopFlag] = field(default=None, init=False)
    """A job's signal caught after the stage's last step (handed over after the save)."""

    @property
    def out_dir(self) -> Path:
        return self.run_dir / self.name

    @property
    def ckpt_dir(self) -> Path:
        return self.run_dir / "checkpoints" / self.name

    def setup(self) -> None:
        from transformers import set_seed

        set_seed(self.cfg.trainer.seed)  # LoRA's initialisation draws from the global RNG before the Trainer seeds it
        self.log_memory_plan()
        model, tok = load_model_and_tokenizer(master_weights(self.cfg.model, self.cfg.trainer, self.cfg.tuning.method),
                                              path=self.init_path, device=load_device(self.cfg.trainer))
        ids = add_index_tokens(self.index, model, tok)
        dataset = to_dataset(self.examples, tok, self.cfg.trainer.max_length, self.cut)
        self.trainable = prepare_trainable(model, self.cfg.tuning, ids, upcast=not self.cfg.trainer.deepspeed)
        self.tokenizer = tok
        run_name = f"{self.cfg.experiment}-{self.cfg.tuning.method}-{self.name}"
        self.loss_total = LossTotalCallback()  # first: it corrects train_loss before the tracker forwards it
        callbacks = [self.loss_total] + ([TrackerCallback(self.tracker, self.name)] if self.tracker is not None else [])
        if self.trainable.method == "lora":
            callbacks.append(EmbeddingRowsCallback(self.trainable))
        self.trainer = ToolsenseSFTTrainer(
            model=self.trainable.model,
            args=sft_config(self.cfg.trainer, self.schedule, self.ckpt_dir, run_name, model.config._attn_implementation,
                            self.cfg.tuning.method),
            train_dataset=dataset,
            processing_class=tok,
            callbacks=callbacks,
            embedding_lr_scale=self.cfg.tuning.embedding_lr_scale,
        )
        self.loss_total.trainer = self.trainer
        plan = plan_batch(self.cfg.trainer, world_size())
        log.info("%s: %d examples (%s); batch %d per device x %d accumulation x %d processes = %d", self.name, len(dataset),
                 ", ".join(sorted(set(dataset["kind"]))), plan.per_device, plan.grad_accum, plan.world_size, plan.effective)

    def log_memory_plan(self) -> None:
        """The stage's per-device memory plan (training/memory.py), logged before its model loads;
        a warning where it exceeds this GPU's memory."""
        shape = model_shape(self.cfg.model, self.init_path, 0 if self.init_path else len(self.index.tokens()))
        if shape is None:
            return
        t = self.cfg.trainer
        plan = memory_plan(shape, self.cfg.tuning, t, world_size(), use_bf16(t), plan_batch(t, world_size()).per_device)
        log.info("%s: %s", self.name, plan.text())
        total = device_memory() if not t.use_cpu else None
        if total is not None and plan.total > total:
            log.warning("%s: the memory plan (%.1f GiB) exceeds this GPU's %.1f GiB: lower trainer.per_device_batch, turn "
                        "trainer.gradient_checkpointing on, or use trainer=ds_zero2 / ds_zero3",
                        self.name, plan.total / 2**30, total / 2**30)

    def train(self) -> dict:
        """Train from the newest complete checkpoint (or from the start). The stage's metrics rows
        after that point are dropped first (the steps are redone and logged again), and
        ``train_loss`` is the mean over all the stage's steps, before and after a resume."""
        ckpt = last_checkpoint(self.ckpt_dir, needs=(LOSS_FILE, ROWS_FILE) if self.trainable.method == "lora" else (LOSS_FILE,))
        if ckpt is not None:
            log.info("%s: resuming from %s", self.name, ckpt)
            if self.trainable.method == "lora" and not restore_embedding_rows(self.trainable, ckpt):
                raise RuntimeError(f"{ckpt} has no {ROWS_FILE} (the trained embedding rows); delete it to restart {self.name}")
        # read now: save_total_limit may delete the resumed checkpoint while training
        self.loss_total.resumed_from, self.loss_total.loss_sum_before = checkpoint_step(ckpt), loss_sum_at(ckpt)
        self.trainer._total_train_tokens = tokens_at(ckpt)  # TRL's num_tokens counts on, not from 0
        if self.trainer.is_world_process_zero():
            dropped = forget_logged_after(self.run_dir / "metrics.jsonl", self.name, checkpoint_step(ckpt))
            if dropped:
                log.info("%s: %d metrics rows logged after step %d are redone and replaced", self.name, dropped, checkpoint_step(ckpt))
        with preemptible() as flag:  # a job's signal: stop at the end of a step, with a checkpoint
            stop = StopOnSignal(flag)
            self.trainer.add_callback(stop)
            out = self.trainer.train(resume_from_checkpoint=ckpt)
            if not stop.stopped_at and flag.agree():  # caught after the last step: hand over once the stage is saved
                self.late_signal = flag
        if stop.stopped_at:
            flag.hand_over(f"{self.name} saved {self.ckpt_dir / f'checkpoint-{stop.stopped_at}'}")
        history = [h["loss"] for h in self.trainer.state.log_history if "loss" in h]
        self.result = {
            "train_loss": stage_loss(out.training_loss, checkpoint_step(ckpt), self.loss_total.loss_sum_before, out.global_step),
            "global_step": out.global_step, "resumed_from": ckpt,
            "first_logged_loss": history[0] if history else None, "last_logged_loss": history[-1] if history else None,
            "cut_by_max_length": self.cut,
        }
        return self.result

    def save(self) -> Path:
        tmp = self.out_dir.with_name(self.name + ".tmp")
        acc = self.trainer.accelerator
        if self.trainable.method == "lora":  # merged alike on DDP and ZeRO, saved in the configured dtype (bf16 on a GPU)
            model = self.trainable.merged(resolve_dtype(str(self.cfg.model.dtype)))
            if acc.is_main_process:
                shutil.rmtree(tmp, ignore_errors=True)
                model.save_pretrained(tmp)
        else:
            self.trainer.save_model(str(tmp))  # gathers ZeRO-3 shards
        if acc.is_main_process:
            self.tokenizer.save_pretrained(tmp)
            tmp.rename(self.out_dir)
        acc.wait_for_everyone()
        return self.out_dir

    def cleanup(self) -> None:
        if self.trainer is not None:  # Accelerate holds the model, optimizer and DeepSpeed engine until told
            self.trainer.accelerator.free_memory()
        if self.loss_total is not None:
            self.loss_total.trainer = None  # the callback's reference alone kept the Trainer (and model) alive
        self.trainer = self.trainable = None
        if self.cfg.trainer.deepspeed:  # else ZeRO-3 stays "enabled" for every later load in this process
            release_deepspeed_state()
        if torch.cuda.is_available():  # hand the stage's memory back before the next stage loads
            gc.collect()
            torch.cuda.empty_cache()

    def run(self) -> dict:
        """setup → train → save → cleanup; returns the training summary (a signal caught after the
        last step is handed over once the stage is saved: training/preemption.py)."""
        result = run_recipe(self)
        if self.late_signal is not None:
            self.late_signal.hand_over(f"{self.name} finished and saved {self.out_dir}")
        return result


def run_recipe(runner: Any) -> dict:
    """A stage-shaped runner's life (``StageRunner``, ``training/toolken.py: ToolkenRunner``):
    setup → train → save, cleanup even when one of them raises; returns ``runner.result``."""
    runner.setup()
    try:
        runner.train()
        runner.save()
    finally:
        runner.cleanup()
    return runner.result
