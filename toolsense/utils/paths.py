"""Where toolsense keeps what it derives from inputs (converted models, built catalogs, reports)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def cache_root() -> Path:
    """``$TOOLSENSE_CACHE``, else ``~/.cache/toolsense``; read at call time so tests can redirect it."""
    return Path(os.environ.get("TOOLSENSE_CACHE") or Path.home() / ".cache" / "toolsense")


def portable_text(text: str) -> str:
    """``text`` without this machine's absolute paths: the working directory's become relative to
    it, the installed package's files ``toolsense/...`` (wherever it is installed), the cache's
    ``$TOOLSENSE_CACHE``, the home folder's ``~`` (an archive is committed and read elsewhere)."""
    package = Path(__file__).resolve().parent.parent  # toolsense/ itself: utils/ is one of its rooms
    for prefix, repl in ((str(cache_root()), "$TOOLSENSE_CACHE"), (str(Path.cwd()) + "/", ""),
                         (str(package) + "/", "toolsense/"), (str(Path.home()) + "/", "~/")):
        if len(prefix) > 2:
            text = text.replace(prefix, repl)
    return text


def local_path(path: str | None) -> str | None:
    """The inverse of :func:`portable_text` for one path: ``$TOOLSENSE_CACHE`` and a leading ``~/``
    made this machine's (a config read back from a committed archive)."""
    if not path:
        return path
    path = path.replace("$TOOLSENSE_CACHE", str(cache_root()), 1)
    return str(Path.home() / path[2:]) if path.startswith("~/") else path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling and a rename: readers (and other
    processes building the same file) see the old file or the whole new one, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with naming(path):
        tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


@contextmanager
def naming(path: str | Path) -> Iterator[None]:
    """An OSError raised while writing ``path`` that names no file (a full disk or quota: ``write()``
    names none) is raised again naming it, so the message says where space ran out."""
    try:
        yield
    except OSError as e:
        if e.filename is None and e.errno:
            raise type(e)(e.errno, e.strerror, str(path)) from e
        raise
