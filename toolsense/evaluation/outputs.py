"""Evaluation output files: ``samples.jsonl`` (appended per item, resumable) and ``results.json``
(published with the evaluation's other result files: utils/publish.py).
Tables are rendered from these files by ``toolsense/reporting/tables.py``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterable, Mapping

from toolsense.utils.io import dump_json
from toolsense.utils.jsonl import DuplicateKey, JsonlStore
from toolsense.utils.paths import atomic_write_text
from toolsense.utils.publish import publish

log = logging.getLogger(__name__)


class SampleLog:
    """``samples.jsonl`` of one evaluation. Items already in the file are skipped on resume;
    a torn last line from an interrupted run is dropped (and said so), never mistaken for data;
    an item is logged once (a second row for it raises ``DuplicateKey``, see utils/jsonl.py).

    Under data-parallel evaluation (``rank`` set) each process appends to its own
    ``samples.rank<r>.jsonl``; items in any rank file count as done (a run interrupted with 8
    processes resumes with 1 or 4), and :meth:`consolidate` (rank 0, after the others finished)
    folds them into ``samples.jsonl``."""

    def __init__(self, path: str | Path, key: str = "item_id", rank: int | None = None):
        self.path = Path(path)
        self.key = key
        self.own_path = self.path if rank is None else self.path.with_name(f"{self.path.stem}.rank{rank}.jsonl")
        self.rows: dict[str, dict] = {}
        for p in [self.path, *self.rank_files()]:
            if p != self.own_path:  # another process may still be appending to its own file
                self.rows.update(JsonlStore(p, key=key, repair=False).by_key)
        self.own = JsonlStore(self.own_path, key=key, unique=True)
        self.rows.update(self.own.by_key)
        if self.rows:
            log.info("resuming %s: %d items already done", self.path, len(self.rows))

    def rank_files(self) -> list[Path]:
        return sorted(self.path.parent.glob(f"{self.path.stem}.rank*.jsonl"))

    def done(self, item_id: str) -> bool:
        return item_id in self.rows

    def add(self, row: dict, replace: bool = False) -> None:
        """Append one item's sample; an item already logged (here or in a rank file) raises
        DuplicateKey naming the file, so no item is counted twice, unless ``replace`` says the
        new row supersedes the old one (a rescored item; readers keep the later row)."""
        if row[self.key] in self.rows and not replace:
            raise DuplicateKey(f"{self.path}: item {row[self.key]!r} is already logged; refusing to log it twice")
        self.rows[row[self.key]] = self.own.append(row, replace=replace)

    def consolidate(self, ids: Iterable[str]) -> None:
        """Fold every rank file into ``samples.jsonl`` (rows in ``ids`` order, then any others),
        written to a temporary file and renamed, then delete the rank files. Call it once all
        processes have finished writing."""
        files = self.rank_files()
        if not files:
            return
        for p in [self.path, *files]:
            self.rows.update(JsonlStore(p, key=self.key, repair=False).by_key)
        ids = list(ids)
        order = ids + sorted(set(self.rows) - set(ids))
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(dump_json(self.rows[i], self.path, ensure_ascii=False) + "\n" for i in order if i in self.rows),
                       encoding="utf-8")
        tmp.replace(self.path)
        for p in files:
            p.unlink()
        self.own = JsonlStore(self.path, key=self.key, unique=True)

    def ordered(self, ids: Iterable[str]) -> list[dict]:
        return [self.rows[i] for i in ids if i in self.rows]

    def close(self) -> None:
        """Nothing to release: every row is written and flushed as it is added."""

    def __enter__(self) -> "SampleLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def json_text(obj: Any, where: str | Path) -> str:
    """How every results file is written: indented JSON, non-ASCII kept; NaN and inf refused naming
    ``where`` (the file) and their key (:func:`dump_json`)."""
    return dump_json(obj, where, indent=2, ensure_ascii=False, default=str)


def write_json(path: str | Path, obj: Any) -> Path:
    """``obj`` as ``path``, whole or not at all; NaN and inf are refused naming their key (:func:`dump_json`)."""
    return atomic_write_text(path, json_text(obj, path))


def publish_result(out_dir: str | Path, result: dict[str, Any], files: Mapping[str, str] | None = None) -> None:
    """One evaluation's ``results.json`` and its other result ``files`` (name -> text: the TREC
    files) published as one set (utils/publish.py), with the ``samples.jsonl`` they were computed
    from named at its present hash."""
    out_dir = Path(out_dir)
    publish(out_dir, {"results.json": json_text(result, out_dir / "results.json"), **(files or {})}, keep=["samples.jsonl"],
            job="evaluate")
