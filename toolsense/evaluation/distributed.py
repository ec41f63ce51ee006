"""Data-parallel evaluation: ``torchrun --nproc_per_node 8 evaluate.py run=...`` gives each
process (one GPU each) every ``world``-th query of a retrieval benchmark. Each process appends
its samples to ``samples.rank<r>.jsonl``; after a barrier rank 0 merges them into
``samples.jsonl`` and computes the metrics, so results equal a single-process run's. Baselines
and probes (cheap) run on rank 0. Single-process runs take none of these paths."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

import torch

from toolsense.utils.ranks import GROUP_TIMEOUT, init_process_group, on_rank0, world_size
from toolsense.utils.ranks import rank as current_rank

T = TypeVar("T")


TIMEOUT = GROUP_TIMEOUT
"""How long a rank waits at a barrier while rank 0 runs baselines and probes."""


@dataclass(frozen=True)
class Shard:
    rank: int = 0
    world: int = 1
    group: object = None
    """The process group barriers and broadcasts use (None = the default group)."""

    @property
    def main(self) -> bool:
        return self.rank == 0

    def take(self, items: Sequence[T]) -> list[T]:
        """This process's items: every ``world``-th, by position in the full benchmark (not in
        what is left to do), so every process agrees without talking, also on resume."""
        return list(items[self.rank :: self.world])

    def barrier(self) -> None:
        if self.world > 1:
            torch.distributed.barrier(group=self.group)

    def on_main(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on rank 0 while the others wait; then every rank raises if it failed, so no
        process is left waiting at a later barrier for one that stopped (e.g. rank 0 refusing
        an output folder that holds another evaluation's samples)."""
        if self.world == 1:
            fn()
            return
        on_rank0(fn, self.group, "the evaluation")


def init_shard() -> Shard:
    """The process's shard from torchrun's environment; joins the process group when there are
    several processes (NCCL on GPUs, else gloo). Rank 0 may spend a while on baselines and
    probes while the others wait, hence the long timeout (:data:`TIMEOUT`).

    Evaluate-after-train finds the group training made (Accelerate's, 30-minute timeout by
    default), whose timeout cannot be changed: the shard then gets a new group with
    :data:`TIMEOUT` over the same ranks, so the long wait applies there too."""
    world, rank = world_size(), current_rank()
    if world == 1:
        return Shard(rank, world)
    if torch.distributed.is_initialized():
        return Shard(rank, world, torch.distributed.new_group(timeout=TIMEOUT))
    init_process_group()
    return Shard(rank, world)


def local_device() -> str:
    """``cuda:<LOCAL_RANK>`` under torchrun with GPUs, else ``cuda`` or ``cpu`` (one rule for
    models, encoders and the audit: :func:`toolsense.models.default_device`)."""
    from toolsense.models import default_device

    return default_device()
