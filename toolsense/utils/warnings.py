"""Repeated warnings summarised: one log line with the count and the file that lists them all.

A loader that met 533 duplicate records used to print 533 warning lines; now it prints one
("533 duplicate tool names dropped (on_duplicate=first); all listed in <file>") and the file
holds one item per line, each naming its ``file:line``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Optional, Sequence

from toolsense.utils.io import sha256_text
from toolsense.utils.paths import atomic_write_text, cache_root


def report_dir() -> Path:
    """Default folder for summary files: ``$TOOLSENSE_CACHE/reports``."""
    return cache_root() / "reports"


def _slug(what: str, words: int = 4) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", what.lower())[:words]) or "items"


def summarise(log: logging.Logger, items: Sequence[str], what: str, path: Optional[str | Path] = None,
              level: int = logging.WARNING) -> Optional[Path]:
    """Log ``len(items) what`` once, naming the file that lists every item (one per line).

    ``path`` None = content-addressed under :func:`report_dir` (``<slug of what>-<hash>.txt``):
    the same items always land in the same file and different inputs never overwrite each
    other. Nothing is logged or written for no items. Returns the file written (or None).
    """
    if not items:
        return None
    text = f"# {len(items)} {what}\n" + "".join(f"{item}\n" for item in items)
    if path is None:  # content-addressed: a file already there holds exactly this text
        path = report_dir() / f"{_slug(what)}-{sha256_text(text)[:12]}.txt"
        if not path.is_file():
            atomic_write_text(path, text)
    else:
        path = atomic_write_text(path, text)
    log.log(level, "%d %s; all listed in %s (first: %s)", len(items), what, path, items[0])
    return path
