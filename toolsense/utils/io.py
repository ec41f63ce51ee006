"""File helpers shared by loaders: transparent .gz, JSONL with file:line errors, hashing."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import math
import subprocess
from pathlib import Path
from typing import IO, Any, Iterator

from toolsense.utils.errors import DataError, MissingFile
from toolsense.utils.paths import atomic_write_text, naming


def malformed_json(where: str | Path, lineno: int, e: json.JSONDecodeError, hint: str = "") -> DataError:
    """``<where>:<line>: malformed JSON (<reason> at column <c>)<hint>``: the one wording of a JSON
    parse error. Some of json's reasons already end in "at" ("Unterminated string starting at",
    "Invalid control character at"); those are not given a second one."""
    reason = e.msg if e.msg.endswith(" at") else f"{e.msg} at"
    return DataError(f"{where}:{lineno}: malformed JSON ({reason} column {e.colno}){hint}")


def open_text(path: str | Path) -> IO[str]:
    path = Path(path)
    if not path.exists():
        raise MissingFile(f"{path}: no such file")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def decode_line(raw: bytes, where: str | Path, lineno: int) -> str:
    """One line's bytes as text; bytes that are not UTF-8 raise DataError naming ``where:line``
    and the column (a text stream would fail on a whole block, naming only a byte offset)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{where}:{lineno}: not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1}); "
                        "re-encode the file as UTF-8") from None


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, text with its line end) for each line of a text file (``.gz``
    read through); bytes that are not UTF-8 raise DataError naming file:line and column."""
    path = Path(path)
    if not path.exists():
        raise MissingFile(f"{path}: no such file")
    with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as f:
        for lineno, raw in enumerate(f, 1):
            yield lineno, decode_line(raw, path, lineno)


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line number, object) for each non-blank line; a line that is not a JSON
    object, or not UTF-8, raises DataError naming file:line."""
    path = Path(path)
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise malformed_json(path, lineno, e) from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def load_json(path: str | Path) -> Any:
    """A JSON file; malformed JSON or bytes that are not UTF-8 raise DataError naming file:line."""
    with open_text(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise malformed_json(path, e.lineno, e) from None
        except UnicodeDecodeError:
            pass
    with (gzip.open(path, "rb") if Path(path).suffix == ".gz" else open(path, "rb")) as f:
        for lineno, raw in enumerate(f, 1):
            decode_line(raw, path, lineno)
    raise AssertionError("unreachable: the file decoded line by line")  # pragma: no cover


def dump_json(obj: Any, where: str | Path = "", **kw: Any) -> str:
    """``json.dumps`` that refuses NaN and inf, which are not JSON (most readers fail on them, and a
    NaN passed off as a number hides that a value is missing: write null): a ValueError names
    ``where`` (the file) and the key holding the number."""
    try:
        return json.dumps(obj, allow_nan=False, **kw)
    except ValueError as e:
        if "Out of range float" not in str(e):
            raise
        key, val = _non_finite(obj) or ("?", "?")
        raise ValueError(f"{where or 'JSON'}: {key}={val} is not a JSON number; refusing to write it "
                         "(a value that does not exist is written as null)") from None


def _non_finite(obj: Any, key: str = "") -> tuple[str, float] | None:
    """The dotted key and value of the first NaN or inf inside ``obj`` (None if there is none)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return key or "<value>", obj
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, (list, tuple)) else ()
    for k, v in items:
        found = _non_finite(v, f"{key}[{k}]" if isinstance(k, int) else f"{key}.{k}" if key else str(k))
        if found:
            return found
    return None


def write_jsonl(path: str | Path, rows, mode: str = "w") -> None:
    with naming(path), open(path, mode, encoding="utf-8") as f:
        for n, row in enumerate(rows, 1):
            f.write(dump_json(row, f"{path} row {n}", ensure_ascii=False) + "\n")


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def git_sha(cwd: str | Path | None = None) -> str | None:
    """The commit of the code that ran (with ``-dirty`` if the tree has changes), or None
    outside a git checkout: the provenance every results.json records."""
    cwd = cwd or Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True,
                               text=True, timeout=10).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


CODE_PATHS = (":(glob)toolsense/**", ":(glob)*.py", "pyproject.toml")
"""What runs (the package, the entry scripts at the top, the build file; git pathspecs): a change elsewhere (docs, a
study's archive being repacked, tests) is not a change of the code a result came from."""


def _git(args: list[str], cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=20).stdout


def code_diff(cwd: str | Path | None = None) -> tuple[str | None, str]:
    """(HEAD's sha, the uncommitted change of the code as one patch: tracked CODE_PATHS against HEAD, then each
    untracked, not ignored file under them as a new file); (None, "") outside a git checkout."""
    cwd = Path(cwd or Path(__file__).resolve().parent)
    try:
        top = Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())
        sha = _git(["rev-parse", "HEAD"], top).strip()
        patch = _git(["diff", "--binary", "HEAD", "--", *CODE_PATHS], top)
        for name in _git(["ls-files", "--others", "--exclude-standard", "--", *CODE_PATHS], top).splitlines():
            new = subprocess.run(["git", "diff", "--binary", "--no-index", "--", "/dev/null", name], cwd=top,
                                 capture_output=True, text=True, timeout=20).stdout  # exit 1: the files differ
            patch += new
        return sha, patch
    except (OSError, subprocess.SubprocessError):
        return None, ""


def code_state(cwd: str | Path | None = None) -> dict[str, Any] | None:
    """The code a result came from: ``{commit, uncommitted, diff_sha256}`` (the sha256 of :func:`code_diff`'s patch,
    None when the code is as committed), or None outside a git checkout (an installed wheel). What every run's
    done.json and results.json record; a study archives the patch itself (study/run.py)."""
    sha, patch = code_diff(cwd)
    if sha is None:
        return None
    return {"commit": sha, "uncommitted": bool(patch), "diff_sha256": sha256_text(patch) if patch else None}


def keep_code_diff(folder: str | Path, cwd: str | Path | None = None) -> tuple[str, str, Path] | None:
    """Where the code differs from its commit: its patch (:func:`code_diff`) written as ``<folder>/<sha256>.diff``
    (kept where present); returns (commit, sha256, path), or None where the code is as committed."""
    sha, patch = code_diff(cwd)
    if not patch:
        return None
    digest = sha256_text(patch)
    path = Path(folder) / f"{digest}.diff"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, patch)
    return str(sha), digest, path


CHECKPOINT_HASH_CACHE = "toolsense_checkpoint_sha256.json"


def checkpoint_sha256(folder: str | Path) -> str:
    """sha256 over (relative path, sha256) of every file of a model folder (weights, config,
    tokenizer): two checkpoints with the same shapes but other weights differ. Each file's hash
    is streamed once and cached in ``<folder>/toolsense_checkpoint_sha256.json`` under its size
    and mtime, so later evaluations of the same checkpoint only stat the files (the cache is
    skipped, with a note, where the folder is read-only)."""
    folder = Path(folder)
    cache_path = folder / CHECKPOINT_HASH_CACHE
    try:
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        cache = {}
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != CHECKPOINT_HASH_CACHE
                   and not p.name.startswith(CHECKPOINT_HASH_CACHE))
    fresh, total = {}, hashlib.sha256()
    for p in files:
        rel, st = p.relative_to(folder).as_posix(), p.stat()
        old = cache.get(rel) or {}
        if old.get("size") == st.st_size and old.get("mtime_ns") == st.st_mtime_ns:
            sha = old["sha256"]
        else:
            sha = sha256_file(p)
        fresh[rel] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}
        total.update(f"{rel}\0{sha}\n".encode("utf-8"))
    if fresh != cache:
        try:
            atomic_write_text(cache_path, json.dumps(fresh, indent=2))
        except OSError as e:
            logging.getLogger(__name__).info("%s: cannot cache checkpoint hashes (%s); they are recomputed next time", folder, e)
    return total.hexdigest()
