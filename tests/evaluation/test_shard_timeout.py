"""Evaluate-after-train under torchrun finds training's process group (Accelerate's 30-minute
timeout); the evaluation's barriers must still wait the 4 hours rank 0 may spend on baselines and
probes. Two real gloo processes."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from toolsense.evaluation.distributed import TIMEOUT, init_shard


def _worker(rank: int, tmp: str) -> None:
    os.environ.update(WORLD_SIZE="2", RANK=str(rank))
    dist.init_process_group("gloo", init_method=f"file://{tmp}/pg", rank=rank, world_size=2,
                            timeout=datetime.timedelta(minutes=30))  # what the Trainer left behind
    shard = init_shard()
    timeouts = [g._get_backend(torch.device("cpu")).options._timeout for g in (dist.group.WORLD, shard.group)]
    shard.barrier()
    seen = []
    shard.on_main(lambda: seen.append("main"))
    Path(tmp, f"rank{rank}.txt").write_text(f"{timeouts[0]}|{timeouts[1]}|{shard.rank}|{seen}")
    dist.destroy_process_group()


def test_shard_waits_four_hours_inside_a_thirty_minute_group(tmp_path):
    mp.spawn(_worker, args=(str(tmp_path),), nprocs=2, join=True)
    assert TIMEOUT == datetime.timedelta(hours=4)
    assert (tmp_path / "rank0.txt").read_text() == "0:30:00|4:00:00|0|['main']"
    assert (tmp_path / "rank1.txt").read_text() == "0:30:00|4:00:00|1|[]"
