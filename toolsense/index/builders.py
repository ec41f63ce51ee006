"""Index builders (a registry): flat atomic tokens, structural service→API paths, ToolGen's
clustered hierarchy (recursive k-means over encoder embeddings), and ToolGen's numeric and
semantic ids (digit tokens; the words of the tool's name), whose tokens are shared between tools
at every level."""

from __future__ import annotations

import inspect
import logging
import re
from typing import Any, Callable, Union

import numpy as np

from toolsense.catalog import Catalog
from toolsense.index.tool_index import ToolIndex
from toolsense.utils.progress import progress
from toolsense.utils.registry import Registry

log = logging.getLogger(__name__)

INDEX_BUILDERS: Registry[Callable[..., ToolIndex]] = Registry("index builder")


@INDEX_BUILDERS.register("flat")
def build_flat(catalog: Catalog) -> ToolIndex:
    """One atomic token ``<<Service&&API>>`` per tool (ToolGen's atomic indexing)."""
    paths = {t.name: (t.token,) for t in catalog}
    init = {t.token: t.name for t in catalog}
    return ToolIndex("flat", "flat", {}, catalog.content_hash(), paths, init)


@INDEX_BUILDERS.register("structural")
def build_structural(catalog: Catalog) -> ToolIndex:
    """Two levels: a service token ``<<S:Service>>`` shared by the service's APIs, then an API
    token ``<<A:Service&&API>>`` unique to the tool."""
    paths, init = {}, {}
    for t in catalog:
        s_tok, a_tok = f"<<S:{t.service}>>", f"<<A:{t.name}>>"
        paths[t.name] = (s_tok, a_tok)
        init[s_tok] = t.service
        init[a_tok] = t.api
    return ToolIndex("hierarchical", "structural", {}, catalog.content_hash(), paths, init)


def _recursive_kmeans(emb: np.ndarray, ids: np.ndarray, branching: int, seed: int, prefix: tuple[int, ...],
                      out: dict[int, tuple[int, ...]], bar=None) -> None:
    """Split ``ids`` into ``branching`` clusters, recursively, until a leaf holds at most
    ``branching`` tools; ``bar`` advances by the tools placed at each leaf."""
    if len(ids) <= branching:
        for j, i in enumerate(ids):
            out[int(i)] = prefix + (j,)
        if bar is not None:
            bar.update(len(ids))
        return
    from sklearn.cluster import KMeans

    labels = KMeans(n_clusters=branching, random_state=seed, n_init=3).fit_predict(emb[ids])
    if len(np.unique(labels)) < 2:  # identical embeddings: split by order so recursion ends
        labels = np.arange(len(ids)) * branching // len(ids)
    for c in range(branching):
        sub = ids[labels == c]
        if len(sub):
            _recursive_kmeans(emb, sub, branching, seed, prefix + (c,), out, bar)


Embeddings = Union[np.ndarray, Callable[[], np.ndarray]]


@INDEX_BUILDERS.register("clustered")
def build_clustered(catalog: Catalog, embeddings: Embeddings | None = None, *, branching: int, seed: int,
                    encoder: str | None = None) -> ToolIndex:
    """ToolGen's hierarchical scheme: recursive k-means (``branching`` clusters per level) over
    ``embeddings`` of the tool texts (``[n_tools, d]`` in catalog order, or a zero-argument
    callable returning them). The index does not encode: the caller supplies them (from
    ``toolsense.models.encoders.catalog_embeddings``, cached on disk); ``encoder`` only names
    them in the index's params. A tool's path is its cluster ids, one token ``<<C:k>>`` per
    level, shared across levels and branches. Deterministic given the embeddings and ``seed``. The
    defaults of ``branching`` and ``seed`` are IndexConfig's (index/config.py), stated there once."""
    if branching < 2:
        raise ValueError(f"index.branching must be >= 2, got {branching}")
    if embeddings is None:
        raise ValueError("the clustered index needs the tools' embeddings from its caller "
                         "(toolsense.models.encoders.catalog_embeddings); none were given")
    emb = np.asarray(embeddings() if callable(embeddings) else embeddings, dtype=np.float32)
    if emb.ndim != 2 or emb.shape[0] != len(catalog):
        raise ValueError(f"got embeddings of shape {emb.shape} for {len(catalog)} tools")
    out: dict[int, tuple[int, ...]] = {}
    with progress(desc="k-means index", total=len(catalog), unit="tool", min_total=2000) as bar:
        _recursive_kmeans(emb, np.arange(len(catalog)), branching, seed, (), out, bar)
    paths = {t.name: tuple(f"<<C:{k}>>" for k in out[i]) for i, t in enumerate(catalog)}
    init = {f"<<C:{k}>>": str(k) for k in range(branching)}
    params = {"branching": branching, "seed": seed, "encoder": encoder or "embedded:all-MiniLM-L6-v2"}
    return ToolIndex("hierarchical", "clustered", params, catalog.content_hash(), paths, init)


@INDEX_BUILDERS.register("numeric")
def build_numeric(catalog: Catalog) -> ToolIndex:
    """ToolGen's numeric indexing: tool ``i`` (catalog order) is its number, zero-padded to the
    width of the largest, one token ``<<N:d>>`` per digit. Ten tokens serve every tool at every
    position, so each is shared by many tools (tool 042 = ``<<N:0>><<N:4>><<N:2>>``); the trie
    makes the digits a hierarchy of tens."""
    width = len(str(max(len(catalog) - 1, 0)))
    paths = {t.name: tuple(f"<<N:{d}>>" for d in str(i).zfill(width)) for i, t in enumerate(catalog)}
    init = {f"<<N:{d}>>": str(d) for d in range(10)}
    return ToolIndex("hierarchical", "numeric", {"width": width}, catalog.content_hash(), paths, {k: v for k, v in init.items()
                                                                                              if any(k in p for p in paths.values())})


def name_words(name: str) -> list[str]:
    """The lower-case words of a tool name: split on anything not a letter or digit and at
    camelCase / letter-digit boundaries (``"GeoDB Cities&&getCity_v2"`` → geo db cities get city v 2)."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)]


@INDEX_BUILDERS.register("semantic")
def build_semantic(catalog: Catalog) -> ToolIndex:
    """ToolGen's semantic indexing over new tokens: a tool's id is the words of its name, service
    then API, one token ``<<W:word>>`` per word, shared by every tool whose name holds the word
    and initialised from the word itself. Two tools whose names give the same words are told
    apart by a final ``<<W:#k>>`` (k = 2, 3, ... in catalog order). (ToolGen spells the name with
    the base vocabulary's own sub-tokens; docs/reference/fidelity.md.)"""
    paths: dict[str, tuple[str, ...]] = {}
    seen: dict[tuple[str, ...], int] = {}
    init: dict[str, str] = {}
    for t in catalog:
        words = name_words(t.service) + name_words(t.api) or ["tool"]
        path = tuple(f"<<W:{w}>>" for w in words)
        init.update({f"<<W:{w}>>": w for w in words})
        seen[path] = seen.get(path, 0) + 1
        if seen[path] > 1:
            init[f"<<W:#{seen[path]}>>"] = str(seen[path])
            path = path + (f"<<W:#{seen[path]}>>",)
        paths[t.name] = path
    return ToolIndex("hierarchical", "semantic", {}, catalog.content_hash(), paths, init)


def builder_params(builder: str, offered: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``offered`` settings that ``builder``'s function takes by name."""
    accepted = inspect.signature(INDEX_BUILDERS.get(builder)).parameters
    return {k: v for k, v in offered.items() if k in accepted}


def build_index(catalog: Catalog, builder: str = "flat", **params: Any) -> ToolIndex:
    return INDEX_BUILDERS.get(builder)(catalog, **params)
