"""Catalogs built from several inputs (a registry), cached as ToolSense JSONL.

A builder is ``build(data_dir, out) -> coverage`` and writes ``out`` atomically plus a
coverage report beside it; ``conf/catalog/<name>.yaml`` names the builder so a missing file is
built on first use (or, with ``auto_build: false``, refused with the command that builds it).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from toolsense.utils.errors import MissingFile
from toolsense.utils.paths import cache_root
from toolsense.utils.registry import Registry

log = logging.getLogger(__name__)

Builder = Callable[[Path, Path], dict[str, Any]]
CATALOG_BUILDERS: Registry[Builder] = Registry("catalog builder")


def default_output(name: str) -> Path:
    """Where a built catalog is cached: ``$TOOLSENSE_CACHE/catalogs/<name>.jsonl``."""
    return cache_root() / "catalogs" / f"{name}.jsonl"


def build_command(name: str, data_dir: str | Path, out: str | Path) -> str:
    return f"python -m toolsense.catalog.build {name} --data-dir {data_dir} --out {out}"


def ensure_built(name: str, out: str | Path, data_dir: str | Path, auto_build: bool) -> Path:
    """``out`` if it exists; else build it with builder ``name`` from ``data_dir`` when
    ``auto_build``, or fail with the command that builds it."""
    out = Path(out)
    if out.is_file():
        return out
    cmd = build_command(name, data_dir, out)
    if not auto_build:
        raise MissingFile(f"catalog {name!r} is not built yet ({out} is missing); build it with: {cmd}")
    log.info("catalog %s: %s is missing, building it (same as: %s)", name, out, cmd)
    CATALOG_BUILDERS.get(name)(Path(data_dir), out)
    return out


def coverage_path(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(out.name.removesuffix(".jsonl") + ".coverage.json")


def coverage_table(coverage: dict[str, Any]) -> str:
    """The coverage counts as a markdown table (source | tools | share)."""
    n = coverage["n_tools"]
    rows = ["| text source | tools | share |", "|---|---:|---:|"]
    rows += [f"| {s} | {c:,} | {100 * c / n:.1f}% |" for s, c in coverage["sources"].items()]
    rows.append(f"| **total** | **{n:,}** | 100% |")
    return "\n".join(rows)
