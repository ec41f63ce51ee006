"""Under torchrun every rank asks for the catalog's embeddings; one fills the cache and the
others read it — behind a barrier when a process group exists (gloo here), else through a file
lock (torchrun's ranks build the index before the Trainer makes its group). Two real processes."""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from toolsense.catalog import Catalog, Tool
from toolsense.models.encoders import catalog_embeddings


class CountingEmbedder:
    """Deterministic rows per text; each encode appends a line to ``log`` and takes a while, so
    a second rank that did not wait would encode too."""

    identity = "counting-test-embedder"

    def __init__(self, log: Path):
        self.log = log

    def encode(self, texts, progress=False, chunk_done=None, skip=None) -> np.ndarray:
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(1.0)
        return np.stack([np.random.default_rng(sum(map(ord, t))).normal(size=8) for t in texts]).astype(np.float32)


def _catalog() -> Catalog:
    tools = [Tool.from_name(f"Svc{i % 3}&&api_{i}", api_description=f"operation {i}") for i in range(12)]
    return Catalog.from_tools((t, f"mem:{i}") for i, t in enumerate(tools))


def _worker(rank: int, world: int, tmp: str, with_group: bool) -> None:
    os.environ.update(WORLD_SIZE=str(world), RANK=str(rank))
    if with_group:
        dist.init_process_group("gloo", init_method=f"file://{tmp}/pg", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
    emb = catalog_embeddings(_catalog(), CountingEmbedder(Path(tmp) / "encodes.log"), root=tmp, progress=False)
    np.save(Path(tmp) / f"rank{rank}.npy", np.asarray(emb))
    if with_group:
        dist.destroy_process_group()


@pytest.mark.parametrize("with_group", [True, False], ids=["barrier", "file-lock"])
def test_two_ranks_encode_the_catalog_once(tmp_path, with_group):
    mp.spawn(_worker, args=(2, str(tmp_path), with_group), nprocs=2, join=True)
    assert len((tmp_path / "encodes.log").read_text().splitlines()) == 1
    a, b = np.load(tmp_path / "rank0.npy"), np.load(tmp_path / "rank1.npy")
    assert a.shape == (12, 8) and np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
