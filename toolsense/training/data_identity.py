"""What a run trains on, by content: the catalog (Stage 1's examples, the index) and each Stage-2 source, as the
sha256 of the records actually read (a source's queries after its split and style filters). Written to
``<run>/sources.json`` when the run starts and checked on every rerun, so a file rewritten at the same path between a
kill and the resume is refused naming the source, instead of one run trained on two data sets.

A run folder from before these fingerprints has none: one warning says its data cannot be checked, and today's
fingerprints are recorded. A run that has produced nothing yet (a start that failed) takes the new data silently, as
its config is reclaimed (utils/rundir.py).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any, Sequence

from toolsense.catalog import Catalog, Query
from toolsense.catalog.loaders import DEMO_DIR
from toolsense.utils.errors import DataError
from toolsense.utils.io import sha256_text
from toolsense.utils.paths import atomic_write_text, portable_text
from toolsense.utils.rundir import RunDir

log = logging.getLogger(__name__)

FILE = "sources.json"


def _sha(records: Sequence[Any]) -> str:
    return sha256_text(json.dumps([dataclasses.asdict(r) for r in records], sort_keys=True, ensure_ascii=False, default=str))


def data_fingerprints(catalog: Catalog, catalog_path: str | None, sources: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """``{name: {files, n, sha256}}`` of the catalog (``catalog``) and each Stage-2 source (``stage2.sources.<i>``:
    data.leakage.QuerySet, its queries as read)."""
    out = {"catalog": {"files": [portable_text(str(catalog_path or DEMO_DIR / "tools.jsonl"))], "n": len(catalog),
                       "sha256": _sha(list(catalog))}}
    for s in sources:
        queries: Sequence[Query] = s.queries
        out[s.name] = {"files": [portable_text(f) for f in s.files], "n": len(queries),
                       "sha256": _sha([dataclasses.replace(q, meta={}) for q in queries])}
    return out


def check_data(run_dir: str | Path, now: dict[str, dict[str, Any]]) -> None:
    """Refuse a rerun of ``run_dir`` whose data differ from those it started on (a ValueError naming the source, its
    files and both record counts); record ``now`` where nothing was recorded (rank 0)."""
    rd = RunDir(run_dir)
    path = rd.path / FILE
    produced = rd.produced()
    if path.is_file() and produced:
        then = json.loads(path.read_text(encoding="utf-8"))
        changed = [name for name in now if name in then and then[name]["sha256"] != now[name]["sha256"]]
        if changed:
            raise DataError("; ".join(
                f"{name} ({', '.join(now[name]['files'])}) differs from the data {run_dir} trained on "
                f"({then[name]['n']} records then, {now[name]['n']} now; sha256 {then[name]['sha256'][:12]} then, "
                f"{now[name]['sha256'][:12]} now)" for name in changed)
                + f": resuming would train one run on two data sets ({', '.join(produced)} exist). Restore the data, "
                  "or train into a new output_dir")
        if set(now) <= set(then):
            return
    elif produced:
        log.warning("%s: a run folder from before source fingerprints (no %s): the data it trained on cannot be "
                    "checked against today's; recording today's, so later reruns are checked", run_dir, FILE)
    if int(os.environ.get("RANK", "0")) == 0:
        rd.path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(now, indent=1, ensure_ascii=False) + "\n")
