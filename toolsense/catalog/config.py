"""The catalog section of every config (``conf/catalog/*.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from toolsense.catalog.catalog import Catalog
from toolsense.catalog.loaders import load_catalog, load_demo_catalog


@dataclass
class CatalogConfig:
    path: Optional[str] = None
    """Catalog file (ToolSense JSONL[.gz], ToolBench query .json, or a virtual-token .txt); None = the demo catalog."""
    format: Literal["auto", "toolsense", "toolbench", "virtual_tokens"] = "auto"
    on_duplicate: Literal["error", "first"] = "error"
    """What to do with a second record of the same canonical name: fail, or keep the first and log each dropped line."""


def load_from_config(cfg: CatalogConfig) -> Catalog:
    if cfg.path is None:
        return load_demo_catalog()
    return load_catalog(cfg.path, cfg.format, cfg.on_duplicate)
