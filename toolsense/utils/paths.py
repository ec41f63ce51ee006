"""Where toolsense keeps what it derives from inputs (converted models, built catalogs, reports)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$TOOLSENSE_CACHE``, else ``~/.cache/toolsense``; read at call time so tests can redirect it."""
    return Path(os.environ.get("TOOLSENSE_CACHE") or Path.home() / ".cache" / "toolsense")


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling and a rename: readers (and other
    processes building the same file) see the old file or the whole new one, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
