"""TRL SFTTrainer glue: batch arithmetic, precision, the SFTConfig of a stage, and callbacks
that log metrics and keep the trained embedding rows in every LoRA checkpoint."""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import TrainerCallback
from transformers.trainer_pt_utils import LengthGroupedSampler, get_length_grouped_indices
from trl import SFTConfig, SFTTrainer

from toolsense.models import ModelConfig, default_device
from toolsense.training.config import StageSchedule, TrainerConfig
from toolsense.training.tuning import Trainable, no_decay_parameter_names
from toolsense.utils.errors import ConfigError

ROWS_FILE = "embedding_rows.pt"
log = logging.getLogger(__name__)


def master_weights(model: ModelConfig, trainer: TrainerConfig, method: str = "full") -> ModelConfig:
    """The model section a stage loads its weights with: fp32 where weights train, unless
    DeepSpeed keeps the fp32 master copy.

    Without DeepSpeed the Trainer's bf16 is autocast: AdamW updates the weights in the dtype
    they were loaded in. Loaded in bf16 (``model.dtype=auto`` on a GPU), every update below
    bf16's spacing (2^-8 of the weight) is lost — at lr 2e-5 nearly all of them. So under full
    fine-tuning ``auto`` loads fp32 (the matmuls still run in bf16 under autocast) and an explicit
    bf16/fp16 is refused. Under LoRA (``method="lora"``) with bf16 compute the frozen base loads
    in bf16 — it never takes a step, and fp32 would double it (32 GB at 8B) — and
    ``tuning.prepare_trainable(upcast=True)`` keeps what trains (adapters, embedding matrices) in
    fp32. DeepSpeed with bf16 keeps fp32 master weights in its optimizer itself: the section is
    left as it is."""
    if trainer.deepspeed:
        return model
    dtype = str(model.dtype)
    if method == "lora" and dtype in ("auto", "bfloat16") and use_bf16(trainer):
        return dataclasses.replace(model, dtype="bfloat16")
    if dtype in ("bfloat16", "float16"):
        raise ConfigError(
            f"model.dtype={dtype} without DeepSpeed: AdamW would update {dtype} weights in place and lose every step below "
            f"their rounding; use model.dtype=auto or float32 (trainer.precision=bf16 then computes in bf16 under autocast "
            f"over fp32 master weights), or trainer=ds_zero2 (DeepSpeed keeps fp32 master weights)")
    return dataclasses.replace(model, dtype="float32") if dtype == "auto" else model


@functools.cache
def _warn_zero3_host_load() -> None:
    """Said once per process, though both stages load."""
    log.warning("ZeRO-3: every rank loads the whole model on the host before DeepSpeed partitions it (no device_map "
                "under ZeRO-3): allot >= ranks x 2 bytes x parameters of host memory per node (8 ranks at 8B: ~128 GB; "
                "the Slurm template asks for --mem=0); ZeRO-2 loads straight onto each GPU")


def load_device(trainer: TrainerConfig) -> str | None:
    """Where a stage loads its model: this rank's GPU (``cuda:<LOCAL_RANK>``), the weights streamed
    there by ``from_pretrained`` (``device_map``) and the virtual tokens' mean initialisation run
    there — no rank holds the whole model (nor fp32 copies of its embedding) in host memory, where
    8 ranks of an 8B model needed ~150 GB. None (the host, where the Trainer expects it) without
    CUDA, with ``trainer.use_cpu``, and under DeepSpeed ZeRO-3: transformers refuses a
    ``device_map`` there (ZeRO-3 partitions the weights itself), so ZeRO-3 still loads each rank's
    copy on the host before DeepSpeed partitions it."""
    if trainer.use_cpu or not torch.cuda.is_available():
        return None
    if ((trainer.deepspeed or {}).get("zero_optimization") or {}).get("stage") == 3:
        if int(os.environ.get("LOCAL_RANK", "0")) == 0:  # host memory is a node's: its first rank says it
            _warn_zero3_host_load()
        return None
    return default_device()


def release_deepspeed_state() -> None:
    """Forget the finished stage's DeepSpeed config, process-wide.

    transformers answers ``is_deepspeed_zero3_enabled()`` from a module-level weak reference to
    the last ``HfDeepSpeedConfig`` (transformers/integrations/deepspeed.py:
    ``set_hf_deepspeed_config``), and Accelerate's process-wide ``AcceleratorState._shared_state``
    keeps that object alive through its ``deepspeed_plugins`` (accelerate/state.py:
    ``AcceleratorState.__init__``) after the Trainer is gone. So after a ZeRO-3 stage every later
    ``from_pretrained`` in the process still runs under ``zero.Init`` and refuses a ``device_map``
    ("DeepSpeed Zero-3 is not compatible with passing a `device_map`",
    transformers/integrations/accelerate.py: ``check_and_set_device_map``): Stage 2's load and
    the evaluation after training (``load_run``) broke. The next Trainer's ``TrainingArguments``
    builds its own state again (it resets ``AcceleratorState`` itself); the process group
    (``PartialState``) is kept, evaluation reuses it."""
    from accelerate.state import AcceleratorState
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    unset_hf_deepspeed_config()
    AcceleratorState._reset_state(reset_partial_state=False)


@dataclass(frozen=True)
class BatchPlan:
    per_device: int
    grad_accum: int
    world_size: int

    @property
    def effective(self) -> int:
        return self.per_device * self.grad_accum * self.world_size


def plan_batch(cfg: TrainerConfig, world_size: int) -> BatchPlan:
    """Split ``trainer.effective_batch`` into per-device batch x accumulation x world size;
    it must divide exactly, so the effective batch is what the config says."""
    per = min(cfg.per_device_batch, cfg.effective_batch // world_size) or 1
    if cfg.effective_batch % (per * world_size):
        raise ConfigError(
            f"trainer.effective_batch={cfg.effective_batch} is not a multiple of trainer.per_device_batch={per} "
            f"x world_size={world_size}"
        )
    return BatchPlan(per, cfg.effective_batch // (per * world_size), world_size)


def use_bf16(cfg: TrainerConfig) -> bool:
    if cfg.precision == "bf16":
        return True
    if cfg.precision == "fp32" or cfg.use_cpu:
        return False
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def resolve_batching(cfg: TrainerConfig, attn_implementation: str | None) -> str:
    if cfg.batching != "auto":
        return str(cfg.batching)
    return "padding_free" if (attn_implementation or "").startswith("flash_attention") else "length_grouped"


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


DDP_TIMEOUT_S = 4 * 3600
"""The process group's timeout: evaluate-after-train reuses training's group while rank 0 runs
baselines and probes and the other ranks wait (Accelerate's default is 30 minutes)."""


def sft_config(cfg: TrainerConfig, schedule: StageSchedule, output_dir: Path, run_name: str, attn_implementation: str | None = None,
               tuning_method: str | None = None) -> SFTConfig:
    """The stage's SFTConfig. ``warmup_ratio`` goes in as ``warmup_steps``: transformers >= 5.0
    reads a value below 1 as a fraction of the steps and deprecated (later removed) ``warmup_ratio``;
    pyproject pins >= 5.2 for ``train_sampling_strategy`` (tests/training/test_schedule.py checks
    the learning rates step by step). Under LoRA every trainable parameter (adapters on every
    linear layer, the embedding) gets a gradient each step, so DDP need not search the graph for
    unused ones (``ddp_find_unused_parameters=False``); full fine-tuning keeps the Trainer's rule
    (a multimodal checkpoint's vision tower is unused in text-only training)."""
    schedule.check("stage")
    plan = plan_batch(cfg, world_size())
    batching = resolve_batching(cfg, attn_implementation)
    return SFTConfig(
        output_dir=str(output_dir),
        run_name=run_name,
        per_device_train_batch_size=plan.per_device,
        gradient_accumulation_steps=plan.grad_accum,
        num_train_epochs=schedule.epochs,
        max_steps=schedule.max_steps,
        learning_rate=schedule.learning_rate,
        lr_scheduler_type=schedule.lr_scheduler,
        warmup_steps=schedule.warmup_ratio,
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm,
        logging_steps=cfg.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        report_to=[],
        bf16=use_bf16(cfg),
        use_cpu=cfg.use_cpu,
        ddp_backend="gloo" if (cfg.use_cpu or not torch.cuda.is_available()) and world_size() > 1 else None,
        seed=cfg.seed,
        data_seed=cfg.seed,
        # Examples arrive tokenized and already cut to trainer.max_length (toolsense.data.examples).
        max_length=None,
        padding_free=batching == "padding_free",
        train_sampling_strategy="group_by_length" if batching == "length_grouped" else "random",
        completion_only_loss=True,
        gradient_checkpointing=cfg.gradient_checkpointing,
        deepspeed=cfg.deepspeed,
        dataloader_num_workers=cfg.dataloader_num_workers,
        disable_tqdm=False,
        ddp_timeout=DDP_TIMEOUT_S,
        ddp_find_unused_parameters=False if tuning_method == "lora" else None,
    )


@contextmanager
def completion_positions_only():
    """Make TRL's fused LM head project only the positions that carry a label, on every device.

    TRL (1.16) scores only labelled positions on Triton devices but *every* position elsewhere,
    to keep tile shapes fixed for graph compilers. Our completions are short (a virtual token and
    EOS after a ~100-token prompt), so on CPU that wastes most of the LM head's FLOPs and the
    vocabulary-sized softmax. The loss, gradients and metrics are the same either way (masked
    positions contribute exactly zero); tests/training/test_compact_head.py checks it.
    """
    try:
        import trl.trainer.utils as trl_utils
    except ImportError:  # pragma: no cover - other TRL layouts: keep TRL's behaviour
        yield
        return
    original = getattr(trl_utils, "_use_triton", None)
    if original is None:
        yield
        return
    trl_utils._use_triton = lambda device: device.type == "cpu" or original(device)
    try:
        yield
    finally:
        trl_utils._use_triton = original


class ToolsenseSFTTrainer(SFTTrainer):
    """SFTTrainer whose embedding / LM-head matrices get no weight decay (see tuning.py) and,
    with ``embedding_lr_scale`` != 1, their own parameter group at a scaled learning rate (the
    scheduler scales every group alike, so the ratio holds through warmup and decay).

    ``compact_lm_head`` (default on) projects only the labelled positions through the LM head on
    CPU as well (see ``completion_positions_only``)."""

    compact_lm_head: bool = True

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not self.compact_lm_head:
            return super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
        with completion_positions_only():
            return super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)

    def __init__(self, *args, embedding_lr_scale: float = 1.0, **kwargs):
        self.embedding_lr_scale = embedding_lr_scale
        ds = getattr(kwargs.get("args"), "deepspeed", None)
        if embedding_lr_scale != 1.0 and isinstance(ds, dict) and "optimizer" in ds:
            raise ConfigError(f"tuning.embedding_lr_scale={embedding_lr_scale} needs the Trainer's optimizer, but the DeepSpeed "
                              "config (trainer.deepspeed) has an 'optimizer' section, which DeepSpeed builds without our parameter "
                              "groups; remove trainer.deepspeed.optimizer or set tuning.embedding_lr_scale=1.0")
        super().__init__(*args, **kwargs)

    def _get_train_sampler(self, train_dataset=None):
        sampler = super()._get_train_sampler(train_dataset)
        if isinstance(sampler, LengthGroupedSampler):
            return EpochSeededLengthGroupedSampler(sampler.batch_size, lengths=sampler.lengths, seed=self.args.data_seed or self.args.seed)
        return sampler

    def get_resumed_dataloader(self, dataloader, num_batches: int):
        """The resumed epoch's loader (its first ``num_batches`` skipped), whose ``set_epoch`` reaches the sampler.
        accelerate's ``DataLoaderShard.set_epoch`` looks two wrappers deep; over several processes the skipping loader
        nests three (SkipBatchSampler > BatchSamplerShard > BatchSampler > sampler), so a run resumed mid-epoch after
        its first epoch drew epoch 0's order and its weights left an uninterrupted run's (2 ranks: 2e-3)."""
        skipped = super().get_resumed_dataloader(dataloader, num_batches)
        own = skipped.set_epoch

        def set_epoch(epoch: int) -> None:
            own(epoch)
            for sampler in nested_samplers(skipped):
                sampler.set_epoch(epoch)

        skipped.set_epoch = set_epoch
        return skipped

    def get_decay_parameter_names(self, model) -> list[str]:
        skip = no_decay_parameter_names(model)
        return [n for n in super().get_decay_parameter_names(model) if n not in skip]

    def create_optimizer(self, model=None):
        # Under DeepSpeed (no 'optimizer' section, refused above) the Trainer builds this optimizer
        # and hands it to deepspeed.initialize, which keeps its parameter groups and their lrs.
        opt = super().create_optimizer(model) if model is not None else super().create_optimizer()
        if self.embedding_lr_scale == 1.0:
            return opt
        named = dict(self.model.named_parameters())
        emb = {id(named[n]) for n in no_decay_parameter_names(self.model) if named[n].requires_grad}
        moved = []
        for group in opt.param_groups:
            moved += [p for p in group["params"] if id(p) in emb]
            group["params"] = [p for p in group["params"] if id(p) not in emb]
        if moved:
            lr = self.args.learning_rate * self.embedding_lr_scale
            opt.add_param_group({"params": moved, "lr": lr, "weight_decay": 0.0})
            log.info("embedding_lr_scale=%g: %d embedding matrices at lr %g%s", self.embedding_lr_scale, len(moved), lr,
                     " (DeepSpeed)" if self.is_deepspeed_enabled else "")
        return opt


def nested_samplers(loader) -> list:
    """Every sampler or batch sampler with a ``set_epoch`` below ``loader`` (``batch_sampler`` / ``sampler`` links)."""
    found, node, seen = [], getattr(loader, "batch_sampler", None), set()
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if hasattr(node, "set_epoch"):
            found.append(node)
        inner = getattr(node, "sampler", None)
        if inner is not None and hasattr(inner, "set_epoch") and id(inner) not in seen:
            seen.add(id(inner))
            found.append(inner)
        node = getattr(node, "batch_sampler", None)
    return found


class EpochSeededLengthGroupedSampler(LengthGroupedSampler):
    """transformers' length-grouped order, drawn for epoch ``e`` from ``seed + e`` alone.

    The stock sampler draws from the global RNG, whose state at an epoch's start a run resumed
    mid-epoch cannot reproduce (it restores the RNG only after re-drawing the order), so the
    resumed steps saw other batches than the killed run would have; here every epoch's order is
    a function of the seed and the epoch (the Trainer calls ``set_epoch``), as accelerate's
    seedable random sampler does for ``batching=padded``."""

    def __init__(self, batch_size: int, lengths: list[int], seed: int):
        super().__init__(batch_size, lengths=lengths)
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        return iter(get_length_grouped_indices(self.lengths, self.batch_size, generator=generator))


class TrackerCallback(TrainerCallback):
    """Forwards the Trainer's logs as ``train/<stage>/<key>`` to the tracker (main process only)."""

    def __init__(self, tracker, stage: str):
        self.tracker, self.stage = tracker, stage

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            metrics = {f"train/{self.stage}/{k}": v for k, v in logs.items() if isinstance(v, (int, float)) and math.isfinite(v)}
            self.tracker.log(metrics, state.global_step)


class EmbeddingRowsCallback(TrainerCallback):
    """Writes the trained embedding rows (the virtual-token rows, or under embedding_rows=all the
    whole embedding / LM-head matrices) into each LoRA checkpoint: they belong to the PEFT model's
    base weights, which a PEFT checkpoint does not otherwise guarantee to hold."""

    def __init__(self, trainable: Trainable):
        self.trainable = trainable

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            tmp = ckpt / (ROWS_FILE + ".tmp")
            torch.save(self.trainable.trained_rows(), tmp)
            tmp.replace(ckpt / ROWS_FILE)  # present only once complete: it marks the checkpoint complete


def restore_embedding_rows(trainable: Trainable, checkpoint: str | Path) -> bool:
    """Load a checkpoint's ``embedding_rows.pt`` into ``trainable``; False when it has none."""
    path = Path(checkpoint) / ROWS_FILE
    if not path.exists():
        return False
    trainable.load_trained_rows(torch.load(path, map_location="cpu"), source=str(path))
    return True
