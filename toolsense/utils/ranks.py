"""The ranks of one job: which process this is, how many there are, and rank 0 deciding for all.

A job of several processes gets its ranks from ``torchrun`` (its environment) or from Slurm: each
task of a ``launcher=slurm`` job is one rank (:func:`export_slurm_ranks`, called by the launcher
before the job's code runs, so torch.distributed, Accelerate and DeepSpeed all find the usual
``RANK`` / ``LOCAL_RANK`` / ``WORLD_SIZE`` / ``MASTER_ADDR`` / ``MASTER_PORT``). torch is imported
inside the functions that talk to the other ranks: importing this module loads nothing heavy."""

from __future__ import annotations

import datetime
import logging
import os
from typing import Any, Callable, TypeVar

from toolsense.utils.errors import UserError

log = logging.getLogger(__name__)

T = TypeVar("T")

GROUP_TIMEOUT = datetime.timedelta(hours=4)
"""The process group's timeout: ranks wait at a barrier while rank 0 saves an 8B checkpoint or runs
baselines and probes after training (torch's default of 10-30 minutes would end the job)."""


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def export_slurm_ranks() -> dict[str, str]:
    """This Slurm task as one rank of its job: submitit's ``TorchDistributedEnvironment`` exports
    RANK (SLURM_PROCID), LOCAL_RANK (SLURM_LOCALID), WORLD_SIZE (SLURM_NTASKS), LOCAL_WORLD_SIZE,
    MASTER_ADDR (the job's first node) and MASTER_PORT (from the job id unless set), replacing any
    value a setup line left; CUDA_VISIBLE_DEVICES is left alone (each rank picks ``cuda:<LOCAL_RANK>``
    among the node's GPUs). Returns what was exported."""
    from submitit.helpers import TorchDistributedEnvironment

    env = TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)
    keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    exported = {k: os.environ[k] for k in keys}
    log.info("Slurm task %s of %s: rank %d of world_size %d (local rank %d, master %s:%s)", os.environ.get("SLURM_PROCID"),
             os.environ.get("SLURM_NTASKS"), env.rank, env.world_size, env.local_rank, env.master_addr, env.master_port)
    return exported


def init_process_group() -> None:
    """Join this job's process group (NCCL on GPUs, gloo on CPUs) when there are several ranks and
    nobody joined it yet; Accelerate, DeepSpeed and the evaluation's shards then use this one."""
    import torch

    if world_size() == 1 or torch.distributed.is_initialized():
        return
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    torch.distributed.init_process_group(backend, timeout=GROUP_TIMEOUT)


def on_rank0(fn: Callable[[], T], group: Any = None, doing: str = "the job") -> T:
    """Run ``fn`` on rank 0 while the other ranks wait; every rank returns its (picklable) value,
    or raises when it failed (a :class:`UserError` on rank 0 is one on every rank), so no rank is
    left waiting at a later barrier for one that stopped.
    One process: just ``fn()``. ``doing`` names the work in the other ranks' error."""
    if world_size() == 1:
        return fn()
    import torch

    init_process_group()
    value: Any = None
    err: BaseException | None = None
    if rank() == 0:
        try:
            value = fn()
        except Exception as e:  # re-raised below, after the other ranks were told
            err = e
    msg = [(value, f"{type(err).__name__}: {err}" if err is not None else None, isinstance(err, UserError))]
    torch.distributed.broadcast_object_list(msg, src=0, group=group)
    if err is not None:
        raise err
    value, failed, users = msg[0]
    if failed is not None:  # a user's error stays one (one line, exit 2), on every rank
        raise (UserError if users else RuntimeError)(f"rank 0 stopped {doing}: {failed}")
    return value


__all__ = ["GROUP_TIMEOUT", "export_slurm_ranks", "init_process_group", "on_rank0", "rank", "world_size"]
