"""Stage-1 memorization formats (a registry; one module each) and the builder that mixes them."""

from __future__ import annotations

import random

from toolsense.catalog import Catalog
from toolsense.data.examples import Example
from toolsense.data.memorization import desc2tok, hier_next, hier_node, mcts, tok2desc  # noqa: F401  (register)
from toolsense.data.memorization.base import MEMORIZATION_FORMATS, MemorizationFormat
from toolsense.data.memorization.config import MemorizationConfig
from toolsense.index import ToolIndex
from toolsense.utils.errors import ConfigError


def check_formats(formats: list[str], scheme: str) -> None:
    """Unknown formats, or hierarchical ones with a flat index, fail naming the field."""
    for name in formats:
        if name not in MEMORIZATION_FORMATS:
            raise ConfigError(f"memorization.formats: unknown format {name!r}; choose from {MEMORIZATION_FORMATS.names()}")
        if MEMORIZATION_FORMATS.get(name).hierarchical and scheme != "hierarchical":
            raise ConfigError(
                f"memorization.formats: {name!r} needs a hierarchical index, but index.builder gives a {scheme} index; "
                "use index=structural or index=clustered, or drop the format"
            )


def repeat_examples(examples: list[Example], passes: float, rng: random.Random) -> list[Example]:
    """``passes`` copies of ``examples``: ``int(passes)`` whole copies, then a seeded subset of
    ``round(frac x len)`` examples for the fractional part (so 0.5 keeps half, 1.5 one copy and a half)."""
    whole, frac = int(passes), passes - int(passes)
    return examples * whole + rng.sample(examples, round(frac * len(examples)))


def build_memorization_examples(catalog: Catalog, index: ToolIndex, cfg: MemorizationConfig) -> list[Example]:
    """Every configured format's examples, each repeated ``cfg.format_epochs`` times (default
    once), concatenated and shuffled with ``cfg.seed``."""
    check_formats(cfg.formats, index.scheme)
    rng = random.Random(cfg.seed)
    out: list[Example] = []
    for name in cfg.formats:
        out.extend(repeat_examples(MEMORIZATION_FORMATS.get(name).build(catalog, index, cfg), cfg.format_epochs.get(name, 1.0), rng))
    rng.shuffle(out)
    return out


__all__ = ["MEMORIZATION_FORMATS", "MemorizationConfig", "MemorizationFormat", "build_memorization_examples", "check_formats"]
