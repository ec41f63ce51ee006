"""Hydra glue kept out of library code: registering structured-config schemas."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore


def register_schema(name: str, node: type) -> None:
    """Register a dataclass as the schema a top-level YAML lists first in its defaults, so a
    bad key or type fails at compose time naming the field."""
    ConfigStore.instance().store(name=name, node=node)
