"""The study's results as one shippable file: the files the report is built from (no weights),
packed into a .tar.xz, and unpacked where the study never ran (``train=false`` on a fresh clone)."""

from __future__ import annotations

import tarfile
from pathlib import Path

from toolsense.study.config import StudyConfig


def unpack_archive(cfg: StudyConfig) -> bool:
    """``train=false`` on a machine where the study never ran (``root`` absent or holding only
    hidden folders): unpack ``archive``
    (paths relative to root's parent) so the report is rebuilt from the shipped results alone.
    True when it unpacked (the archive is then not packed again from its own contents)."""
    root = Path(cfg.root)
    ran_here = root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir())  # Hydra's .hydra_reproduce aside
    if ran_here or not cfg.archive or not Path(cfg.archive).is_file():
        return False
    root.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(cfg.archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.split("/")[0] == root.name]
        if not members:
            raise FileNotFoundError(f"archive: {cfg.archive} holds nothing under {root.name}/ (root={cfg.root})")
        tar.extractall(root.parent, members=members, filter="data")
    print(f"{cfg.root} held no results: unpacked {len(members)} files of {cfg.archive} into {root.parent}")
    return True


REPORT_FILES = ("results.json", "samples.jsonl", "samples.fingerprint.json", "drift.json", "config.yaml", "index.json",
                "metrics.jsonl", "timings.jsonl", "done.json")
"""The files a report is rebuilt from (under a run: its evaluation, config and index; never weights)."""


def _reported(parts: tuple[str, ...]) -> bool:
    """Whether ``<root>/<parts>`` belongs in the archive: not hidden (.hydra), and not inside a run's
    model or checkpoint folder (``<sweep>/<run>/stage1/...``; ``<run>/eval/stage1/`` is results)."""
    return not any(x.startswith(".") for x in parts) and not (len(parts) > 3 and parts[2] in ("stage1", "stage2", "checkpoints"))


def archive_results(root: str | Path, archive: str | Path) -> int:
    """Pack ``root``'s REPORT_FILES (not those inside a run's model or checkpoint folders) into
    ``archive`` (.tar.xz), written beside and renamed into place; returns the number of files."""
    root, archive = Path(root), Path(archive)
    files = sorted(p for p in root.rglob("*") if p.name in REPORT_FILES and p.is_file() and _reported(p.relative_to(root).parts))
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + ".tmp")
    with tarfile.open(tmp, "w:xz") as tar:
        for path in files:
            tar.add(path, arcname=str(path.relative_to(root.parent)))
    tmp.replace(archive)
    return len(files)
