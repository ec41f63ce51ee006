"""The memorization-format registry and what every format shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from toolsense.catalog import Catalog
from toolsense.data.examples import Example
from toolsense.data.memorization.config import MemorizationConfig
from toolsense.data.prompts import with_system
from toolsense.index import ToolIndex
from toolsense.utils.registry import Registry

BuildFn = Callable[[Catalog, ToolIndex, MemorizationConfig], list[Example]]


@dataclass(frozen=True)
class MemorizationFormat:
    build: BuildFn
    hierarchical: bool
    """Only valid with a hierarchical index (paths of several tokens)."""
    teaches: str
    """One line: what the format teaches the model."""


MEMORIZATION_FORMATS: Registry[MemorizationFormat] = Registry("memorization format")


def register(name: str, teaches: str, hierarchical: bool = False):
    def deco(fn: BuildFn) -> BuildFn:
        MEMORIZATION_FORMATS.register(name)(MemorizationFormat(fn, hierarchical, teaches))
        return fn

    return deco


def token_text(index: ToolIndex, name: str) -> str:
    """A tool's id as text: its virtual tokens concatenated."""
    return "".join(index.paths[name])


def user_messages(text: str, cfg: MemorizationConfig) -> tuple[dict, ...]:
    return tuple(with_system([{"role": "user", "content": text}], cfg))
