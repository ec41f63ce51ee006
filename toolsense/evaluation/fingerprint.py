"""Fingerprints of evaluations: what produced an evaluation folder's ``samples.jsonl``.

Samples are resumed item by item, so a folder reused by another model, stage, benchmark or
decoding would silently mix that evaluation's rows into this one's results. Each evaluation
folder therefore holds ``samples.fingerprint.json`` (written before the first sample): the
run directory, stage, a content hash of the checkpoint, the index and benchmark hashes, the
decoding (or baseline / probe) settings, and the model when there is no run. A rerun resumes
only on an exact match; otherwise :func:`claim` refuses, naming every differing field with both
values. ``overwrite=true`` deletes a differing evaluation's own files (and says which) and
starts it over; an exact match still resumes, its samples being what this config would write.

Settings that cannot change a sample (the ``metrics`` bootstrap, the device; the batch size but under 16-bit CUDA) are
left out, so an interrupted run resumes elsewhere or at another batch size; the cut-offs ``metrics.ks`` shape each sample's
hits and stay in, under ``decoding`` as before; ``benchmark.limit`` is left out: its items are a prefix (a longer one resumes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from toolsense.evaluation.outputs import write_json
from toolsense.utils.io import git_sha, sha256_file, sha256_text

log = logging.getLogger(__name__)

FINGERPRINT_FILE = "samples.fingerprint.json"
CHECKPOINT_HASH_CACHE = "toolsense_checkpoint_sha256.json"


class FingerprintMismatch(ValueError):
    """An output folder holds samples of another evaluation than the one asked for."""


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
            write_json(cache_path, fresh)
        except OSError as e:
            log.info("%s: cannot cache checkpoint hashes (%s); they are recomputed next time", folder, e)
    return total.hexdigest()


def decoding_identity(dec: Any, ks: Sequence[int], ev: Any = None) -> dict[str, Any]:
    """What shapes a retrieval sample: the search (``DecodingConfig.identity``), the cut-offs ``ks`` (beside the search
    fields, where folders written while it was a decoding field keep it), and ``batch_size`` where the model ``ev`` runs
    in bf16/fp16 on CUDA, whose kernels and padding move near-ties with the batch shape (tests/decoding/test_cuda.py)."""
    shaped = ev is not None and (p := next(ev.model.parameters())).is_cuda and p.element_size() == 2
    return {**dec.identity(), "ks": list(ks), **({"batch_size": dec.batch_size} if shaped else {})}


def benchmark_identity(bench: Any) -> dict[str, Any]:
    """The benchmark's file hash and the selection that shapes its items (not ``limit``)."""
    cfg = bench.config
    return {"sha256": bench.sha256, "loader": cfg.loader, "split": cfg.split, "style": cfg.style,
            "missing": cfg.missing}


def model_identity(ev: Any) -> dict[str, Any]:
    """Who answers: run directory (its folder name: the checkpoint hash says which weights, and
    a folder moved to another machine still matches), stage and checkpoint hash (or the base
    model's name when there is no run), the loaded dtype, the index and the prompts."""
    src = ev.source
    run = Path(src["run"]).resolve() if src.get("run") else None
    return {"run": run.name if run else None, "stage": src["stage"], "model": src["model"],
            "checkpoint_sha256": checkpoint_sha256(run / src["stage"]) if run else None,
            "dtype": str(next(ev.model.parameters()).dtype), "index_sha256": ev.index_sha256,
            "prompts": dataclasses.asdict(ev.prompts)}


def catalog_identity(catalog: Any) -> str:
    """sha256 of the catalog's tool names and texts: what a baseline ranks."""
    return sha256_text("\n".join(f"{t.name}\t{t.text()}" for t in catalog))


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists stay values), after a JSON round trip so
    tuples and lists compare equal."""
    obj = json.loads(json.dumps(obj, default=str))
    if not isinstance(obj, dict):
        return {prefix: obj}
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(flatten(v, key) if isinstance(v, dict) and v else {key: v})
    return out


def differences(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """``field: <on disk> (on disk) vs <now> (now)`` for each field whose values differ."""
    a, b = flatten(dict(stored)), flatten(dict(wanted))
    return [f"{k}: {a.get(k, '<absent>')!r} (on disk) vs {b.get(k, '<absent>')!r} (now)"
            for k in sorted(set(a) | set(b)) if a.get(k, "<absent>") != b.get(k, "<absent>")]


def own_files(out_dir: Path) -> list[Path]:
    """The files one evaluation writes into its folder (nothing else there is touched)."""
    names = ["samples.jsonl", "results.json", FINGERPRINT_FILE]
    found = [out_dir / n for n in names if (out_dir / n).exists()]
    return found + sorted(out_dir.glob("samples.rank*.jsonl"))


def _conflict(out_dir: Path, wanted: dict[str, Any]) -> list[str]:
    """Why ``out_dir`` cannot be resumed as ``wanted`` (empty when it can)."""
    fp_path = out_dir / FINGERPRINT_FILE
    if fp_path.exists():
        try:
            stored = json.loads(fp_path.read_text(encoding="utf-8"))["fingerprint"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            return [f"{fp_path} is unreadable ({e})"]
        return differences(_portable(stored), wanted)
    if own_files(out_dir):
        return [f"{', '.join(p.name for p in own_files(out_dir))} without {FINGERPRINT_FILE} "
                "(written by an older toolsense or by hand): what produced them is unknown"]
    return []


def _portable(stored: Any) -> Any:
    """A fingerprint written before runs were named by folder (``system.run`` an absolute path
    of the machine that wrote it) read as one written now, so such folders still resume."""
    system = stored.get("system") if isinstance(stored, dict) else None
    if isinstance(system, dict) and isinstance(system.get("run"), str) and Path(system["run"]).is_absolute():
        return {**stored, "system": {**system, "run": Path(system["run"]).name}}
    return stored


def claim(plan: Sequence[tuple[Path, dict[str, Any]]], overwrite: bool = False) -> None:
    """Make each ``(folder, fingerprint)`` of ``plan`` ready before anything is computed: an
    exact match resumes; a fresh folder gets its fingerprint file; any other folder is refused
    — every conflict of the plan in one error — unless ``overwrite``, which deletes that
    evaluation's own files (logged by name) and starts it over."""
    conflicts = {d: why for d, fp in plan if (why := _conflict(Path(d), fp))}
    if conflicts and not overwrite:
        lines = [f"  {d}:\n    " + "\n    ".join(why) for d, why in conflicts.items()]
        raise FingerprintMismatch(
            "these output folders hold samples of another evaluation, so resuming would mix its results "
            "into this one:\n" + "\n".join(lines)
            + "\nUse another output_dir, or overwrite=true to delete those evaluations' files and start them over.")
    for d, fp in plan:
        d = Path(d)
        if d in conflicts:
            gone = own_files(d)
            for p in gone:
                p.unlink()
            log.warning("overwrite=true: %s held another evaluation (%s); deleted %s", d, "; ".join(conflicts[d]),
                        ", ".join(p.name for p in gone))
        if not (d / FINGERPRINT_FILE).exists():
            write_json(d / FINGERPRINT_FILE, {"fingerprint": fp, "git_sha": git_sha(),
                                              "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
