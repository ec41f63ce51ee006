"""Fingerprints of evaluations: what produced an evaluation folder's ``samples.jsonl``.

Samples are resumed item by item, so a folder reused by another model, stage, benchmark or
decoding would silently mix that evaluation's rows into this one's results. Each evaluation
folder therefore holds ``samples.fingerprint.json`` (written before the first sample): the
run directory, stage, a content hash of the checkpoint, the index and benchmark hashes, the
decoding (or baseline / probe) settings, and the model when there is no run. A rerun resumes
only on an exact match; otherwise :func:`claim` refuses, naming every differing field with both
values; a folder holding only its fingerprint (a start that failed before its first sample) is
claimed anew. ``overwrite=true`` deletes a differing evaluation's own files (and says which) and
starts it over; an exact match still resumes, its samples being what this config would write.

Settings that cannot change a sample (the ``metrics`` bootstrap, the device; the batch size but under 16-bit CUDA) are
left out, so an interrupted run resumes elsewhere or at another batch size (the sizes that ran, the out-of-memory
halvings and the world size are provenance: ``batching`` in results.json, ``world_sizes`` in the fingerprint file);
the cut-offs ``metrics.ks`` shape each sample's hits and stay in, under ``decoding`` as before; ``benchmark.limit`` is
left out: its items are a prefix (a longer one resumes).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any, Sequence

from toolsense.evaluation.outputs import write_json
from toolsense.utils.config import differences
from toolsense.utils.errors import UserError
from toolsense.utils.io import CHECKPOINT_HASH_CACHE, checkpoint_sha256, git_sha, sha256_text  # noqa: F401 (re-exported)
from toolsense.utils.publish import MANIFEST
from toolsense.utils.rundir import RunDir

log = logging.getLogger(__name__)

FINGERPRINT_FILE = "samples.fingerprint.json"


class FingerprintMismatch(UserError):
    """An output folder holds samples of another evaluation than the one asked for."""


def decoding_identity(dec: Any, ks: Sequence[int], ev: Any = None) -> dict[str, Any]:
    """What shapes a retrieval sample: the search (``DecodingConfig.identity``), the cut-offs ``ks`` (beside the search
    fields, where folders written while it was a decoding field keep it), and ``batch_size`` where the model ``ev`` runs
    in bf16/fp16 on CUDA, whose kernels and padding move near-ties with the batch shape (tests/decoding/test_cuda.py).
    ``head_precision`` is the mode that runs on ``ev``'s device (``auto``: tf32 on CUDA, fp32 on a CPU, left out)."""
    p = next(ev.model.parameters()) if ev is not None else None
    shaped = p is not None and p.is_cuda and p.element_size() == 2
    device = "cuda" if p is not None and p.is_cuda else "cpu"  # where decoding.head_precision=auto resolves
    return {**dec.identity(device), "ks": list(ks), **({"batch_size": dec.batch_size} if shaped else {})}


def benchmark_identity(bench: Any) -> dict[str, Any]:
    """The benchmark's file hash and the selection that shapes its items (not ``limit``)."""
    cfg = bench.config
    return {"sha256": bench.sha256, "loader": cfg.loader, "split": cfg.split, "style": cfg.style,
            "missing": cfg.missing, **({"max_gold": cfg.max_gold} if cfg.max_gold is not None else {})}


def model_identity(ev: Any) -> dict[str, Any]:
    """Who answers: run directory (its folder name: the checkpoint hash says which weights, and
    a folder moved to another machine still matches), stage and checkpoint hash (or the base
    model's name when there is no run), the loaded dtype, the index and the prompts."""
    src = ev.source
    run = Path(src["run"]).resolve() if src.get("run") else None
    step = src.get("checkpoint")
    folder = RunDir(run).model_folder(src["stage"], step) if run else None
    return {"run": run.name if run else None, "stage": src["stage"], "model": src["model"],
            **({"checkpoint": step} if step is not None else {}),
            "checkpoint_sha256": checkpoint_sha256(folder) if folder else None,
            "dtype": str(next(ev.model.parameters()).dtype), "index_sha256": ev.index_sha256,
            "prompts": dataclasses.asdict(ev.prompts)}


def catalog_identity(catalog: Any) -> str:
    """sha256 of the catalog's tool names and texts: what a baseline ranks."""
    return sha256_text("\n".join(f"{t.name}\t{t.text()}" for t in catalog))


def own_files(out_dir: Path) -> list[Path]:
    """The files one evaluation writes into its folder (nothing else there is touched)."""
    names = ["samples.jsonl", "results.json", MANIFEST, FINGERPRINT_FILE]
    found = [out_dir / n for n in names if (out_dir / n).exists()]
    return found + sorted(out_dir.glob("samples.rank*.jsonl"))


def _conflict(out_dir: Path, wanted: dict[str, Any]) -> list[str]:
    """Why ``out_dir`` cannot be resumed as ``wanted`` (empty when it can)."""
    fp_path = out_dir / FINGERPRINT_FILE
    if own_files(out_dir) == [fp_path]:  # claimed, nothing computed (a start that failed): reclaimed
        return []
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


CHECKPOINT_FIELDS = ("run", "stage", "model", "checkpoint_sha256")


def _checkpoint(system: Any) -> tuple | None:
    """Which weights answer in a fingerprint's ``system`` (:data:`CHECKPOINT_FIELDS`); None for a baseline."""
    return tuple(system.get(k) for k in CHECKPOINT_FIELDS) if isinstance(system, dict) and "checkpoint_sha256" in system else None


def one_checkpoint(plan: Sequence[tuple[Path, dict[str, Any]]]) -> None:
    """An evaluation folder (``<out>``, over its ``<benchmark>/<system>`` folders) holds one checkpoint's
    evaluations, so its table and a comparison row never mix two models: a ``<benchmark>/model`` (or
    probe) folder of ``<out>`` evaluated with other weights than ``plan``'s is refused, naming both."""
    wanted = next((c for _, fp in plan if (c := _checkpoint(fp.get("system")))), None)
    mine = {Path(d) for d, _ in plan}
    for fp_path in sorted({f for d in mine for f in d.parent.parent.glob(f"*/*/{FINGERPRINT_FILE}")}) if wanted else []:
        try:
            other = _checkpoint(_portable(json.loads(fp_path.read_text(encoding="utf-8"))["fingerprint"]).get("system"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue  # unreadable: claim names it where it matters (a folder of the plan)
        if other and other != wanted and fp_path.parent not in mine and own_files(fp_path.parent) != [fp_path]:
            there, here = (", ".join(f"{k} {v}" for k, v in zip(CHECKPOINT_FIELDS, c)) for c in (other, wanted))
            raise FingerprintMismatch(
                f"{fp_path.parent.parent.parent} holds evaluations of another checkpoint ({fp_path.parent}: {there}) "
                f"than this one ({here}): one evaluation folder holds one system's checkpoint, so its table and "
                "comparison rows never mix two. Use another output_dir, or delete that evaluation's folder.")


def claim(plan: Sequence[tuple[Path, dict[str, Any]]], overwrite: bool = False, world_size: int = 1) -> None:
    """Make each ``(folder, fingerprint)`` of ``plan`` ready before anything is computed: an
    exact match resumes; a fresh folder gets its fingerprint file; any other folder is refused
    — every conflict of the plan in one error — unless ``overwrite``, which deletes that
    evaluation's own files (logged by name) and starts it over. ``world_size`` (the processes that
    share the retrieval) is provenance, not identity: the file lists each one its samples were
    written on (``world_sizes``), and a resume on another warns, naming both (:func:`note_world_size`)."""
    one_checkpoint(plan)
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
        if own_files(d) in ([], [d / FINGERPRINT_FILE]):
            write_json(d / FINGERPRINT_FILE, {"fingerprint": fp, "git_sha": git_sha(), "world_sizes": [world_size],
                                              "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        else:
            note_world_size(d, world_size)


def note_world_size(out_dir: Path, world_size: int) -> None:
    """A resumed folder's fingerprint file lists ``world_size`` among the world sizes its samples were
    written on; a resume on another size than the last warns, naming both: the retrieval's queries are
    shared out by rank (every ``world``-th), so its batches, and under bf16 on CUDA its near-ties, differ."""
    fp_path = out_dir / FINGERPRINT_FILE
    stored = json.loads(fp_path.read_text(encoding="utf-8"))
    sizes = stored.get("world_sizes") or [None]  # a file written before world sizes were recorded: unknown (null)
    if sizes[-1] not in (None, world_size):
        log.warning("%s: resumed on world size %d; its samples so far were written on world size %s, so its batch "
                    "shapes differ from an uninterrupted run's (recorded in %s)", out_dir, world_size, sizes[-1], FINGERPRINT_FILE)
    if sizes[-1:] != [world_size]:
        write_json(fp_path, {**stored, "world_sizes": [*sizes, world_size]})
