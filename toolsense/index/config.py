"""The index section of every config (``conf/index/*.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from toolsense.catalog import Catalog
from toolsense.index.builders import INDEX_BUILDERS, Embeddings, build_index, builder_params
from toolsense.index.tool_index import ToolIndex
from toolsense.utils.config import Seed


@dataclass
class IndexConfig:
    builder: str = "flat"
    """A name from the INDEX_BUILDERS registry (``index/builders.py``): flat: one atomic token
    per tool; structural: service token then API token; clustered: ToolGen's recursive k-means
    hierarchy; numeric: the tool's number, one token per digit; semantic: the words of the
    tool's name, one token per word (numeric / semantic tokens are shared between tools)."""
    branching: int = 10
    """clustered only: clusters per level."""
    seed: Seed = 0
    """clustered only: k-means seed (the index is deterministic given it)."""
    encoder: Optional[str] = None
    """clustered only: sentence encoder path; None = embedded all-MiniLM-L6-v2. The caller
    (training / evaluation set-up) supplies its cached embeddings; the index never encodes."""

    @property
    def scheme(self) -> str:
        return "flat" if self.builder == "flat" else "hierarchical"

    def __post_init__(self) -> None:
        self.builder = INDEX_BUILDERS.check(self.builder, "index.builder")
        if self.branching < 2:
            raise ValueError(f"index.branching must be >= 2, got {self.branching}")


def index_from_config(cfg: IndexConfig, catalog: Catalog, embeddings: Optional[Embeddings] = None) -> ToolIndex:
    """Builds ``cfg``'s index; ``embeddings`` (an array or a zero-argument callable, called only
    by the clustered builder) come from the caller, since the index never imports the models.
    Each builder gets the settings its signature names (flat and structural take none)."""
    offered = {"embeddings": embeddings, "branching": cfg.branching, "seed": cfg.seed, "encoder": cfg.encoder}
    return build_index(catalog, cfg.builder, **builder_params(cfg.builder, offered))
