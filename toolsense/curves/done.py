"""The done.json of a study's evaluate.py process (an untrained evaluation, a checkpoint of a curve):
written when it ended under its overrides, read to skip it when the study reruns under the same ones."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from toolsense.utils.io import code_state
from toolsense.utils.paths import atomic_write_text


def _eval_identity(cmd: list[str]) -> str:
    # the overrides, without python, -m, the job and output_dir (as when the job was a script: done.json files match)
    return hashlib.sha256(json.dumps(cmd[3:-1]).encode()).hexdigest()


def evaluation_finished(out: Path, cmd: list[str]) -> bool:
    """Whether an untrained evaluation of the study ended under these overrides (its done.json)."""
    try:
        return json.loads((out / "done.json").read_text(encoding="utf-8")).get("overrides_sha256") == _eval_identity(cmd)
    except (OSError, ValueError, AttributeError):
        return False


def mark_evaluation_finished(out: Path, cmd: list[str]) -> None:
    """Write the done.json of an untrained evaluation that ended (:func:`evaluation_finished` reads it)."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "done.json", json.dumps({"overrides_sha256": _eval_identity(cmd),
                                                      "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                                      "code": code_state()}, indent=2))
