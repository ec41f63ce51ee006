"""One append-only JSONL store for every resumable file (generated items, rejections, the LLM
reply cache, evaluation samples, audit scores).

Why one class: a run can be killed at any byte. A file whose last line was being written when
the process died ends in a torn line (no newline, half a JSON object) or, on some file
systems, in NUL padding. Every reader used to handle that differently (or crash). Here the
contract is one place:

- on open, complete lines are read; a torn or NUL-padded *last* line is cut off the file (it
  was never acknowledged to the caller) with one warning naming the file and the bytes cut;
- a malformed line that is *not* last is real corruption: :class:`DataError` names file:line
  and nothing is changed; so is a complete line (any, the last too) that is not UTF-8;
- :meth:`append` writes one whole line under a lock and flushes it (``fsync=True`` also
  syncs), so concurrent writer threads never interleave and an acknowledged row survives a
  crash of the process;
- a keyed store opened with ``unique=True`` (evaluation samples) refuses to append a key the
  file already holds — also one another process appended since this store was opened — with
  :class:`DuplicateKey`, so no item is ever counted twice.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator

from toolsense.utils.io import DataError, decode_line, dump_json, malformed_json
from toolsense.utils.paths import naming

log = logging.getLogger(__name__)


def _repair_tail(path: Path) -> tuple[bytes, int]:
    """The file's bytes up to the end of its last complete, parseable line, and how many
    bytes follow it (to cut). Only the tail is examined for parseability."""
    data = path.read_bytes()
    end = len(data)
    stripped = data.rstrip(b"\x00")
    cut_at = stripped.rfind(b"\n") + 1  # 0 when there is no complete line
    if cut_at < len(stripped) or len(stripped) < end:
        end = cut_at
    body = data[:end]
    # a complete last line that still is not JSON (NUL bytes inside it, a half-flushed block)
    last_start = body.rstrip(b"\n").rfind(b"\n") + 1
    last = body[last_start:].strip(b"\n")
    if last.strip():
        try:
            json.loads(last.decode("utf-8"))
        except UnicodeDecodeError:  # complete but not UTF-8: data to name (_load), unless a NUL-padded block
            if b"\x00" in last:
                end = last_start
        except json.JSONDecodeError:
            end = last_start
            body = data[:end]
    return body, len(data) - end


class DuplicateKey(ValueError):
    """A row whose key the store already holds was appended to a ``unique`` store."""


class JsonlStore:
    """Append-only JSONL file, safe against torn last lines; thread-safe appends.

    ``rows`` holds every row read at open plus every row appended since, in file order. With
    ``key`` (a field name or a function of the row) rows are also found by key (:meth:`get`,
    ``in``; a later row wins). ``unique=True`` (needs ``key``) makes a repeated key an error
    instead: each append takes an exclusive ``flock`` on the file, first reads what other
    processes appended since, and raises :class:`DuplicateKey` naming the file and key rather
    than write a second row. ``repair=False`` reads a file another process may still be
    appending to: a torn last line is skipped, but the file is left alone.
    """

    def __init__(self, path: str | Path, *, key: str | Callable[[dict], Hashable] | None = None,
                 fsync: bool = False, repair: bool = True, unique: bool = False):
        if unique and key is None:
            raise ValueError("JsonlStore(unique=True) needs a key")
        self.path = Path(path)
        self.fsync = fsync
        self.unique = unique
        self._key = (lambda row: row[key]) if isinstance(key, str) else key
        self._lock = threading.Lock()
        self.rows: list[dict[str, Any]] = []
        self.by_key: dict[Hashable, dict[str, Any]] = {}
        self.cut_bytes = 0
        self._size = 0  # bytes of the file this store has read or written
        if self.path.exists():
            self._load(repair)

    def _load(self, repair: bool) -> None:
        body, cut = _repair_tail(self.path)
        if cut and repair:
            log.warning("%s: cut a torn last line (%d bytes) left by an interrupted write", self.path, cut)
            with open(self.path, "r+b") as f:
                f.truncate(len(body))
            self.cut_bytes = cut
        self._size = len(body)
        for lineno, raw in enumerate(body.split(b"\n"), 1):
            line = decode_line(raw, self.path, lineno)
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise malformed_json(self.path, lineno, e, "; only a torn last line is repaired automatically") from None
            if not isinstance(row, dict):
                raise DataError(f"{self.path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            self._remember(row)

    def _remember(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if self._key is not None:
            self.by_key[self._key(row)] = row

    def get(self, k: Hashable) -> dict[str, Any] | None:
        return self.by_key.get(k)

    def __contains__(self, k: Hashable) -> bool:
        return k in self.by_key

    def append(self, row: dict[str, Any], replace: bool = False) -> dict[str, Any]:
        """Write ``row`` as one whole, flushed line; returns it. A ``unique`` store raises
        :class:`DuplicateKey` (and writes nothing) when the file already holds the row's key,
        unless ``replace`` says this row deliberately supersedes it (a later row wins)."""
        line = (dump_json(row, self.path, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with naming(self.path), open(self.path, "a+b") as f:  # a full disk names the file
                if self.unique:
                    fcntl.flock(f, fcntl.LOCK_EX)  # released when f closes
                    self._read_appended(f)
                    k = self._key(row)
                    if k in self.by_key and not replace:
                        raise DuplicateKey(f"{self.path}: already holds a row with key {k!r}; refusing to append it again "
                                           "(is another process writing into this folder?)")
                f.write(line)
                f.flush()
                if self.fsync:
                    os.fsync(f.fileno())
                self._size = f.tell()
            self._remember(row)
        return row

    def _read_appended(self, f) -> None:
        """Remember the complete rows another process appended after the bytes this store knows."""
        f.seek(0, os.SEEK_END)
        end = f.tell()
        if end <= self._size:
            return
        f.seek(self._size)
        tail = f.read(end - self._size)
        for line in tail[: tail.rfind(b"\n") + 1].decode("utf-8").splitlines():
            if line.strip():
                self._remember(json.loads(line))
        self._size += tail.rfind(b"\n") + 1

    def extend(self, rows) -> None:
        for row in rows:
            self.append(row)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self.rows))

    def __len__(self) -> int:
        return len(self.rows)
