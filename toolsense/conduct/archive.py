"""The study's results archive (``StudyConfig.archive``): the files the report is built from (no
weights) as one shippable .tar.xz, packed as the study goes and restored on a fresh machine.

A study runs over several sessions, each on a fresh machine: ``outputs/`` is lost between them, the
committed archive is not. So the study packs the files its report is built from (results, per-item
samples, drift, run configs and indexes, timings, done.json; never weights) of every *finished* run
into the archive whenever a run finishes (:class:`ArchiveProgress`), with this machine's absolute
paths made portable (utils/publish.py: :func:`portable_bytes`); a later ``python reproduce.py study=<name>`` first restores
the finished runs it lacks (:func:`restore_archive`), which train.py then skips by their done.json,
and trains the rest. ``train=false`` on a machine where the study never ran unpacks the whole
archive (:func:`unpack_archive`) and rebuilds the report from it alone.
"""

from __future__ import annotations

import io
import logging
import os
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Protocol

from toolsense.utils.compose import checkout_path, shipped_file
from toolsense.utils.errors import DataError
from toolsense.utils.publish import portable_bytes

log = logging.getLogger(__name__)


class ArchivedStudy(Protocol):
    """What the archive reads of a study's config (study/config.py ``StudyConfig``)."""

    name: str
    root: str
    archive: str


def unpack_archive(cfg: ArchivedStudy) -> bool:
    """``train=false`` on a machine where the study never ran (``root`` absent or holding only
    hidden folders): unpack ``archive`` (``shipped_file``: refused naming where it looked) into root's parent
    so the report is rebuilt from the shipped results; True when it unpacked (then it is not packed again)."""
    root = Path(cfg.root)
    ran_here = root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir())  # Hydra's .hydra_reproduce aside
    if ran_here or not cfg.archive:
        return False
    archive = shipped_file(cfg.archive, f"study={cfg.name}: {root} holds no results and its archive", "archive")
    root.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.split("/")[0] == root.name]
        if not members:
            raise DataError(f"archive: {cfg.archive} holds nothing under {root.name}/ (root={cfg.root})")
        tar.extractall(root.parent, members=members, filter="data")
    print(f"{cfg.root} held no results: unpacked {len(members)} files of {cfg.archive} into {root.parent}")
    return True


def restore_archive(cfg: ArchivedStudy) -> int:
    """Before training (``train=true``): bring back from ``archive`` what a machine that lost
    ``root`` had finished. Sessions run on fresh machines (outputs/ is gone, the committed archive
    is not): every run of the archive that has no done.json under ``root`` is unpacked there whole
    (its done.json included, so train.py skips it when its config matches), and every other
    archived file missing under ``root`` (timings, untrained evaluations) is unpacked beside it;
    nothing present is overwritten. Returns the runs restored."""
    root = Path(cfg.root)
    archive = checkout_path(cfg.archive) if cfg.archive else None
    if archive is None or not archive.is_file():  # a study's first run writes it
        return 0
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.split("/")[0] == root.name]
        runs = {"/".join(m.name.split("/")[1:3]) for m in members if m.name.endswith("/done.json") and m.name.count("/") == 3}
        restore = {r for r in runs if not (root / r / "done.json").is_file()}
        picked = [m for m in members
                  if "/".join(m.name.split("/")[1:3]) in restore or not (root.parent / m.name).exists()]
        root.parent.mkdir(parents=True, exist_ok=True)
        tar.extractall(root.parent, members=picked, filter="data")
    if picked:
        print(f"restored {len(restore)} finished runs ({len(picked)} files) from {cfg.archive} into {cfg.root}: "
              "train.py skips each whose config matches its done.json")
    return len(restore)


REPORT_FILES = ("results.json", "samples.jsonl", "samples.fingerprint.json", "drift.json", "config.yaml", "index.json",
                "metrics.jsonl", "timings.jsonl", "done.json", "registration.json")
"""The files a report is rebuilt from (under a run: its evaluation, config and index; never weights)."""


CACHES = (".full_catalog", ".curves")
"""Hidden folders under root of results the report computes itself and reads back (full_catalog.py's
per-benchmark rankings over the 46,984-tool catalog; curves.py's checkpoint evaluations, whose runs may not
have finished), their .json files packed: a report rebuilt from the archive needs neither the catalog nor
the minutes they took."""


CODE_DIR = ".code"
"""Under root: each uncommitted change of the code a study invocation ran on, as ``<diff sha256>.diff``
(study/run.py writes it before any run starts), packed into the archive: a run's done.json names its
diff's hash, and the diff itself travels with the results."""


def _reported(root: Path, parts: tuple[str, ...]) -> bool:
    """Whether ``<root>/<parts>`` belongs in the archive: not hidden (.hydra), not inside a run's
    model or checkpoint folder (``<sweep>/<run>/stage1/...``; ``<run>/eval/stage1/`` is results),
    and not of a run that has not finished (no done.json, no combined eval/results.json): a run in
    progress is left out whole, so an archive restored elsewhere never holds half an evaluation."""
    if any(x.startswith(".") for x in parts) or (len(parts) > 3 and parts[2] in ("stage1", "stage2", "checkpoints")):
        return False
    run = root / parts[0] / parts[1] if len(parts) > 2 else None
    if run is not None and (run / "config.yaml").is_file():
        return (run / "done.json").is_file() or (run / "eval" / "results.json").is_file()
    return True


def archive_results(root: str | Path, archive: str | Path) -> int:
    """Pack ``root``'s REPORT_FILES of finished runs (not those inside a run's model or checkpoint
    folders) into ``archive`` (.tar.xz), absolute paths of this machine made portable, written
    beside and renamed into place; returns the number of files."""
    root, archive = Path(root), checkout_path(archive)  # a relative archive: beside the configs
    files = sorted(p for p in root.rglob("*") if p.is_file() and (
        p.name in REPORT_FILES and _reported(root, p.relative_to(root).parts)
        or p.relative_to(root).parts[0] in CACHES and p.suffix == ".json"
        or p.relative_to(root).parts[0] == CODE_DIR and p.suffix == ".diff"))
    archive.parent.mkdir(parents=True, exist_ok=True)
    # a temporary file of its own: two packers at once (two study processes on one root) must not write into one file
    fd, name = tempfile.mkstemp(dir=archive.parent, prefix=archive.name + ".", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:xz") as tar:
            datas = portable_bytes(files)
            for path in files:
                data = datas[path]
                info = tar.gettarinfo(path, arcname=str(path.relative_to(root.parent)))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        tmp.replace(archive)
    finally:
        tmp.unlink(missing_ok=True)
    return len(files)


class ArchiveProgress:
    """Repack ``archive`` from ``root`` when the set of finished runs (their done.json) has changed
    since the last pack: the study archives as it goes (``run_sweeps`` calls it while it waits)."""

    def __init__(self, root: str | Path, archive: str | Path, every_s: float = 60.0):
        self.root, self.archive, self.every_s = Path(root), checkout_path(archive), every_s
        self.seen: frozenset[str] = frozenset()
        self.last = 0.0

    def __call__(self, force: bool = False) -> None:
        if not force and time.time() - self.last < self.every_s:
            return
        self.last = time.time()
        finished = frozenset(str(p) for p in self.root.glob("*/*/done.json"))
        if finished != self.seen or force:
            n = archive_results(self.root, self.archive)
            log.info("archived %d files (%d finished runs) into %s", n, len(finished), self.archive)
            self.seen = finished
