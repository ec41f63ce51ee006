"""Encoding a large catalog in an order that is useful before it ends.

:func:`toolsense.models.encoders.catalog_embeddings` encodes longest texts first (least padding),
so an encoding stopped half-way leaves the longest half: no catalog to rank. On a shared CPU a
46,984-tool catalog can take hours, so here the tools go in a seeded order instead: the ``first``
tools (a benchmark's gold tools), then every other tool in a seeded random permutation, in chunks
of ``chunk`` tools (each chunk length-sorted into batches by the embedder). After any number of
chunks the finished rows are the gold tools plus a *uniform random sample* of the rest, which
:func:`encoded_so_far` returns to rank against. Each chunk is saved atomically under
``<cache>/embeddings/progressive/<key>/`` (the key as the embedding cache's: catalog, texts,
template, encoder identity), so a killed run resumes at the next chunk; when the last chunk is
done the whole matrix is stored as the ordinary cache entry, and ``catalog_embeddings`` (hence
``baseline=dense``) reads it without encoding.
"""

from __future__ import annotations

import json
import logging
import random
import time
from pathlib import Path
from typing import Iterable

import numpy as np

from toolsense.catalog import Catalog
from toolsense.models.encoders.cache import _save_npy, cache_root, entry_key, store_entry
from toolsense.models.encoders.embedders import Embedder
from toolsense.utils.errors import UserError
from toolsense.utils.paths import atomic_write_text

log = logging.getLogger(__name__)


def encoding_order(catalog: Catalog, first: Iterable[str], seed: int = 0) -> list[str]:
    """``first`` (those in the catalog, sorted), then the other tools in a seeded random order."""
    head = sorted(set(first) & set(catalog.names))
    taken = set(head)
    rest = [n for n in catalog.names if n not in taken]
    return head + random.Random(seed).sample(rest, len(rest))


def progress_dir(catalog: Catalog, embedder: Embedder, template: str, root: str | Path | None = None) -> Path:
    _, digest, _ = entry_key(catalog, embedder.identity, template, True)
    return cache_root(root) / "progressive" / digest


def _manifest(folder: Path, order: list[str], chunk: int, n_first: int, seed: int) -> dict:
    path = folder / "order.json"
    want = {"order": order, "chunk": chunk, "n_first": n_first, "seed": seed}
    if path.is_file():
        have = json.loads(path.read_text(encoding="utf-8"))
        if have != want:
            raise UserError(f"{path} was written for another order, chunk size or seed "
                            f"(chunk {have.get('chunk')} vs {chunk}, seed {have.get('seed')} vs {seed}, "
                            f"{have.get('n_first')} vs {n_first} first tools): delete {folder} to start over")
        return have
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(want) + "\n")
    return want


def encode_progressively(catalog: Catalog, embedder: Embedder, template: str, first: Iterable[str], seed: int = 0,
                         chunk: int = 1024, root: str | Path | None = None) -> np.ndarray:
    """Encode ``catalog``'s ``template`` texts chunk by chunk in :func:`encoding_order` (resuming
    from the chunks already saved), then store and return the whole normalised matrix as the
    embedding cache's entry for (catalog, template, encoder)."""
    from toolsense.models.encoders.cache import TEXT_TEMPLATES

    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    first = list(first)
    folder = progress_dir(catalog, embedder, template, root)
    order = encoding_order(catalog, first, seed)
    _manifest(folder, order, chunk, len(set(first) & set(catalog.names)), seed)
    render = TEXT_TEMPLATES.get(template)
    n_chunks = -(-len(order) // chunk)
    t_start, done_now = time.perf_counter(), 0
    for i in range(n_chunks):
        path = folder / f"{i:05d}.npy"
        if path.is_file():
            continue
        names = order[i * chunk : (i + 1) * chunk]
        t0 = time.perf_counter()
        rows = embedder.encode([render(catalog[n]) for n in names])
        _save_npy(path, np.asarray(rows, dtype=np.float32))
        done_now += len(names)
        rate = done_now / (time.perf_counter() - t_start)
        left = len(order) - min(len(order), (i + 1) * chunk)
        log.info("%s chunk %d/%d (%d tools) in %.0fs; %.2f texts/s this run; %d tools left (~%.0f min)",
                 template, i + 1, n_chunks, len(names), time.perf_counter() - t0, rate, left, left / rate / 60)
    names, emb = encoded_so_far(catalog, embedder, template, root)
    pos = {n: j for j, n in enumerate(names)}
    full = np.ascontiguousarray(emb[[pos[n] for n in catalog.names]])
    return store_entry(catalog, embedder.identity, template, full, seconds=time.perf_counter() - t_start, root=root)


def encoded_so_far(catalog: Catalog, embedder: Embedder, template: str,
                   root: str | Path | None = None) -> tuple[list[str], np.ndarray]:
    """(names, L2-normalised rows) of every chunk saved so far, in encoding order: the first
    tools, then a uniform random sample of the others. Empty when nothing is saved."""
    folder = progress_dir(catalog, embedder, template, root)
    if not (folder / "order.json").is_file():
        return [], np.zeros((0, 0), dtype=np.float32)
    meta = json.loads((folder / "order.json").read_text(encoding="utf-8"))
    order, chunk = meta["order"], meta["chunk"]
    names, parts = [], []
    for i in range(-(-len(order) // chunk)):
        path = folder / f"{i:05d}.npy"
        if not path.is_file():
            break  # chunks are written in order: the sample is the prefix
        rows = np.load(path)
        block = order[i * chunk : (i + 1) * chunk]
        if len(rows) != len(block):
            raise UserError(f"{path} holds {len(rows)} rows, its chunk has {len(block)} tools: delete it to re-encode it")
        names += block
        parts.append(rows)
    if not parts:
        return [], np.zeros((0, 0), dtype=np.float32)
    emb = np.concatenate(parts).astype(np.float32)
    return names, emb / np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)
