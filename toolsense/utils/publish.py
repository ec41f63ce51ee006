"""Publishing a job's result files together, and reading only what was published.

A job's result files (evaluate.py's ``table.md`` / ``results.json`` / ``report.html``, one
evaluation's ``results.json`` and TREC files, compare.py's ``comparison.*`` and plots) must be read
as one set: a kill between two writes had left a folder half new, half old. :func:`publish` writes
each new file beside its old one (``.<name>.staged``), then ``manifest.json`` atomically (the
commit point: every file's sha256), then renames the staged files into place. A kill before the
manifest leaves the old files and the old manifest; a kill after it leaves the new manifest, whose
files are found under their names or still staged, and the next publish (or
:func:`complete`) finishes the renames. Files that grow in place (an appended ``samples.jsonl``)
are named with the hash they had when the set was published (``keep``); per-rank files and
``.lock`` are not results and are left out.

Readers trust only what a manifest names: :func:`read_published` returns a file's published bytes
(the staged copy where the rename had not happened), and refuses a file whose bytes match neither.
A folder from before manifests existed is read as it is, said once per process."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from toolsense.utils.io import DataError, sha256_file
from toolsense.utils.paths import atomic_write_text, portable_text

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
_legacy_said: set[str] = set()


def _step(what: str, path: Path) -> None:
    """Called after each write of a publish (fault injection: tests replace it with a kill)."""


def staged_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.staged")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_synced(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def manifest(folder: str | Path) -> dict[str, Any] | None:
    """``folder``'s manifest, None when it has none (a folder written before manifests)."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(found, dict) or not isinstance(found.get("files"), dict):
        raise DataError(f"{path}: field 'files' is missing (not a toolsense manifest?)")
    return found


def complete(folder: str | Path) -> None:
    """Finish an interrupted publish in ``folder``: rename the staged files the manifest names into
    place and remove staged files it does not name (a publish killed before its manifest)."""
    folder = Path(folder)
    named = (manifest(folder) or {}).get("files", {})
    for name, entry in named.items():
        staged = staged_path(folder / name)
        if staged.is_file() and sha256_file(staged) == entry["sha256"]:
            staged.replace(folder / name)
    for staged in folder.glob(".*.staged"):
        staged.unlink(missing_ok=True)


def publish(folder: str | Path, files: Mapping[str, str | bytes], keep: Iterable[str] = (), job: str = "") -> dict[str, Any]:
    """Write ``files`` (name in ``folder`` -> text or bytes) as one set, with ``keep`` (files already
    in ``folder`` that belong to it, named with their present hash); returns the manifest. The
    caller holds the folder (utils/rundir.py: ``holding``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    complete(folder)
    entries: dict[str, dict[str, Any]] = {}
    for name, data in files.items():
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        staged = staged_path(folder / name)
        _write_synced(staged, raw)
        _step("staged", staged)
        entries[name] = {"sha256": _sha256(raw), "bytes": len(raw)}
    for name in keep:
        if (folder / name).is_file():
            entries[name] = {"sha256": sha256_file(folder / name), "bytes": (folder / name).stat().st_size}
    made = {"job": job, "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "files": entries}
    atomic_write_text(folder / MANIFEST, json.dumps(made, indent=2, ensure_ascii=False))
    _step("manifest", folder / MANIFEST)
    for name in files:
        staged_path(folder / name).replace(folder / name)
        _step("renamed", folder / name)
    return made


def read_published(path: str | Path) -> bytes:
    """The bytes of ``path`` as its folder's manifest published them: the file, or its staged copy
    where a publish was killed before renaming it. A DataError when the manifest does not name the
    file or neither copy has its hash (changed since it was published). A folder without a
    manifest (from before) is read as it is; said once per process."""
    path = Path(path)
    found = manifest(path.parent)
    if found is None:
        if not _legacy_said:
            log.warning("%s has no %s (written before result files were published together): read as it is; "
                        "said once for every such folder", path.parent, MANIFEST)
        _legacy_said.add(str(path.parent))
        return path.read_bytes()
    entry = found["files"].get(path.name)
    if entry is None:
        raise DataError(f"{path}: not among the files {path.parent / MANIFEST} publishes ({sorted(found['files'])}); "
                        "written outside a publish, it is not trusted")
    for candidate in (path, staged_path(path)):
        if candidate.is_file():
            data = candidate.read_bytes()
            if _sha256(data) == entry["sha256"]:
                return data
    raise DataError(f"{path}: its content is not what {path.parent / MANIFEST} published (sha256 {entry['sha256'][:12]}...): "
                    "changed since; rerun the job that wrote it")


def load_published_json(path: str | Path) -> Any:
    """:func:`read_published` parsed as JSON; malformed JSON is a DataError naming file:line."""
    try:
        return json.loads(read_published(path).decode("utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None


def portable_bytes(files: list[Path]) -> dict[Path, bytes]:
    """Each file's bytes with this machine's paths made portable, and each manifest.json naming a
    file that changed so re-hashed: the restored folder reads as published (its sha256s were of the original bytes)."""
    raw = {p: p.read_bytes() for p in files}
    out = {p: portable_text(b.decode("utf-8")).encode("utf-8") for p, b in raw.items()}
    for path in (p for p in files if p.name == MANIFEST):
        made, moved = json.loads(out[path]), False
        for name, entry in made.get("files", {}).items():
            new, old = out.get(path.parent / name), raw.get(path.parent / name)
            if new is not None and new != old and entry.get("sha256") == _sha256(old):
                entry.update(sha256=_sha256(new), bytes=len(new))
                moved = True
        if moved:
            out[path] = json.dumps(made, indent=2, ensure_ascii=False).encode("utf-8")
    return out
