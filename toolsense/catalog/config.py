"""The catalog section of every config (``conf/catalog/*.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from toolsense.utils.choices import StrEnum, choice

from toolsense.catalog.catalog import Catalog
from toolsense.catalog.loaders import load_catalog, load_demo_catalog


class CatalogFormat(StrEnum):
    auto = "auto"
    toolsense = "toolsense"
    toolbench = "toolbench"
    virtual_tokens = "virtual_tokens"


class OnDuplicate(StrEnum):
    error = "error"
    first = "first"


@dataclass
class CatalogConfig:
    path: Optional[str] = None
    """Catalog file (ToolSense JSONL[.gz], ToolBench query .json, or a virtual-token .txt); None = the demo catalog."""
    format: CatalogFormat = CatalogFormat.auto
    on_duplicate: OnDuplicate = OnDuplicate.error
    """What to do with a second record of the same canonical name: fail, or keep the first and log each dropped line."""


    def __post_init__(self) -> None:
        self.format = choice(CatalogFormat, self.format, "catalog.format")
        self.on_duplicate = choice(OnDuplicate, self.on_duplicate, "catalog.on_duplicate")


def load_from_config(cfg: CatalogConfig) -> Catalog:
    if cfg.path is None:
        return load_demo_catalog()
    return load_catalog(cfg.path, cfg.format.value, cfg.on_duplicate.value)
