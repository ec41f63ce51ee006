"""On-disk cache of a catalog's tool-text embeddings.

A catalog is encoded once per (catalog content, texts, text template, encoder identity incl.
backend, normalisation): the key's SHA-256 names ``<key>.npy`` (float32 ``[n_tools, d]``) and
``<key>.json`` (the key, tool names in row order, shape, encoder, created time) under
``$TOOLSENSE_CACHE/embeddings`` (default ``~/.cache/toolsense/embeddings``). Both are written
to a temporary file and renamed, the sidecar last, so a killed run leaves nothing that is later
trusted; an entry is used only if its sidecar's key, names and shape match. Long encodings
checkpoint each length-sorted batch under ``<key>.parts/`` and a rerun resumes from them.
Entries are loaded memory-mapped. Under torchrun one process fills an entry while the
others wait and then read it (:func:`one_filler`). Query embeddings are not cached: a benchmark's queries are
few and encoded in seconds."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from toolsense.catalog import Catalog, Tool
from toolsense.models.encoders.embedders import Embedder
from toolsense.utils.io import sha256_text
from toolsense.utils.paths import cache_root as toolsense_cache
from toolsense.utils.registry import Registry

log = logging.getLogger(__name__)

TEXT_TEMPLATES: Registry[Callable[[Tool], str]] = Registry("text template")
TEXT_TEMPLATES.register("tool_text")(Tool.text)


@TEXT_TEMPLATES.register("api_text")
def api_text(t: Tool) -> str:
    """What the API does, without the service text every API of a service shares."""
    return f"{t.api_title or t.api}: {t.api_description or t.tool_description}"


def cache_root(root: str | Path | None = None) -> Path:
    """Where embedding matrices are kept: ``<root or the toolsense cache>/embeddings``."""
    return (Path(root) if root else toolsense_cache()) / "embeddings"


def _atomic_save(path: Path, write: Callable[[Path], None]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def _save_npy(path: Path, arr: np.ndarray) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.save(f, arr)
    _atomic_save(path, write)


def _load_entry(npy: Path, side: Path, key: dict, names: list[str]) -> np.ndarray | None:
    """The cached matrix if the entry is complete and is exactly this key, else None."""
    if not (npy.exists() and side.exists()):
        return None
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
        arr = np.load(npy, mmap_mode="r")
    except (OSError, ValueError) as e:
        log.warning("ignoring unreadable embedding cache entry %s: %s", npy, e)
        return None
    if meta.get("key") != key or meta.get("names") != names or list(arr.shape) != meta.get("shape") or arr.dtype != np.float32:
        log.warning("ignoring embedding cache entry %s: its sidecar does not match", npy)
        return None
    return arr


def _encode_with_parts(texts: list[str], embedder: Embedder, parts: Path, progress: bool) -> np.ndarray:
    parts.mkdir(parents=True, exist_ok=True)

    def done(i: int, rows: np.ndarray) -> None:
        try:  # a checkpoint only saves time on a rerun; another process may have finished the entry
            _save_npy(parts / f"{i:06d}.npy", rows)
        except OSError as e:
            log.debug("embedding checkpoint %d not written: %s", i, e)

    def skip(i: int) -> np.ndarray | None:
        f = parts / f"{i:06d}.npy"
        return np.load(f) if f.exists() else None

    return embedder.encode(texts, progress=progress, chunk_done=done, skip=skip)


def catalog_embeddings(catalog: Catalog, embedder: Embedder, template: str = "tool_text", normalize: bool = True,
                       root: str | Path | None = None, progress: bool = True) -> np.ndarray:
    """``[len(catalog), d]`` float32 embeddings of each tool's ``template`` text (rows in catalog
    order; L2-normalised when ``normalize``), from the cache or encoded once and stored there.
    The returned array is a read-only memory map when it comes from disk."""
    key, digest, texts = entry_key(catalog, embedder.identity, template, normalize)
    names = list(catalog.names)
    folder = cache_root(root)
    npy, side, parts = folder / f"{digest}.npy", folder / f"{digest}.json", folder / f"{digest}.parts"
    folder.mkdir(parents=True, exist_ok=True)
    with one_filler(folder / f"{digest}.lock"):  # every rank enters: the barrier is collective
        cached = _load_entry(npy, side, key, names)
        if cached is None:
            return _fill(texts, names, key, embedder, normalize, npy, side, parts, progress)
    log.info("embeddings of %d tools from cache %s", len(names), npy)
    return cached


def entry_key(catalog: Catalog, identity: str, template: str, normalize: bool) -> tuple[dict, str, list[str]]:
    """(key, its digest that names the entry's files, the texts) of a catalog's cache entry."""
    texts = [TEXT_TEMPLATES.get(template)(t) for t in catalog]
    key = {"catalog": catalog.content_hash(), "texts": sha256_text("\x1e".join(texts))[:16], "template": template,
           "encoder": identity, "normalize": bool(normalize)}
    return key, sha256_text(json.dumps(key, sort_keys=True))[:24], texts


def store_entry(catalog: Catalog, identity: str, template: str, emb: np.ndarray, seconds: float,
                root: str | Path | None = None) -> np.ndarray:
    """Store ``emb`` (rows in catalog order, L2-normalised) as the normalised entry of (catalog,
    template, encoder ``identity``), as :func:`catalog_embeddings` would; returned memory-mapped."""
    if emb.shape[0] != len(catalog):
        raise ValueError(f"{emb.shape[0]} rows for a catalog of {len(catalog)} tools")
    key, digest, _ = entry_key(catalog, identity, template, True)
    folder = cache_root(root)
    folder.mkdir(parents=True, exist_ok=True)
    npy, side = folder / f"{digest}.npy", folder / f"{digest}.json"
    _save_npy(npy, np.ascontiguousarray(emb, dtype=np.float32))
    meta = {"key": key, "names": list(catalog.names), "shape": list(emb.shape), "encoder": identity,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "encode_seconds": round(seconds, 2)}
    _atomic_save(side, lambda tmp: tmp.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8"))
    log.info("stored embeddings of %d tools -> %s", len(catalog), npy)
    return np.load(npy, mmap_mode="r")


@contextmanager
def one_filler(lock: Path) -> Iterator[None]:
    """Let one process of a multi-process job fill a cache entry while the others wait, then
    read it: rank 0 first behind a barrier when a process group exists, else an exclusive file
    lock on ``lock`` (torchrun's ranks build the index and the MCTS negatives before the Trainer
    makes its group). Without either, 8 ranks would each encode the whole catalog."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and _group_ready():
        import torch.distributed as dist

        if dist.get_rank() != 0:
            dist.barrier()
        try:
            yield
        finally:
            if dist.get_rank() == 0:
                dist.barrier()
        return
    if world == 1:
        yield
        return
    import fcntl

    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _group_ready() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    return dist.is_available() and dist.is_initialized()


def _fill(texts: list[str], names: list[str], key: dict, embedder: Embedder, normalize: bool, npy: Path, side: Path,
          parts: Path, progress: bool) -> np.ndarray:
    """Encode ``texts`` (resuming from ``parts``), store the entry and return it memory-mapped."""
    t0 = time.perf_counter()
    emb = _encode_with_parts(texts, embedder, parts, progress)
    if normalize:
        emb = emb / np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    _save_npy(npy, emb)
    meta = {"key": key, "names": names, "shape": list(emb.shape), "encoder": embedder.identity,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "encode_seconds": round(time.perf_counter() - t0, 2)}
    _atomic_save(side, lambda tmp: tmp.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8"))
    shutil.rmtree(parts, ignore_errors=True)
    log.info("encoded %d tools in %.1fs -> %s", len(names), meta["encode_seconds"], npy)
    return np.load(npy, mmap_mode="r")


def encoder_embeddings(catalog: Catalog, encoder: str | None = None, template: str = "tool_text", backend: str = "torch") -> np.ndarray:
    """Cached, L2-normalised embeddings of the catalog by a local sentence encoder (None = the
    embedded MiniLM): what hard negatives, clustered indexes and generation pools use."""
    from toolsense.models.encoders.embedders import SentenceEncoder

    return catalog_embeddings(catalog, SentenceEncoder(encoder, backend), template)  # type: ignore[arg-type]
