"""A study's pre-registered analysis plan (``StudyConfig.analysis``), recorded before its data exist.

A rule chosen after its results are known (a metric, a cut-off, a scale, a margin) can be fitted to
them. So the first ``reproduce.py`` of a study writes ``<root>/registration.json`` — the plan, its
sha256, the git commit and whether the code had uncommitted changes (the hash of their diff, which the
study keeps under ``<root>/.code``: run.py), the time, and how many
finished runs already existed (0 for a true pre-registration) — before any sweep starts, and packs
it into the study's archive at once. A later invocation whose plan hashes differently keeps the
first registration and appends the change (old and new hash, the keys that moved, how many runs
existed then); the report prints the registration and, for a rule changed after results existed,
says so and shows the verdict under both (``changed_rules``).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from toolsense.plan.config import AnalysisPlan
from toolsense.utils.io import code_state
from toolsense.utils.paths import atomic_write_text

FILE = "registration.json"


LATER = {"regime": None, "secondary": {}, "seed_subsets": [], "power": None}
"""Plan fields added after plans were registered, at their defaults: left out of the plan (and its hash), so the plans
registered before each existed keep their hashes; ``findings.<n>.power`` likewise when None."""


def plan_dict(plan: AnalysisPlan | dict) -> dict[str, Any]:
    """The plan as plain JSON-able data (keys sorted when hashed), without the fields of :data:`LATER` at their defaults."""
    d = plan if isinstance(plan, dict) else asdict(plan)
    d = {k: v for k, v in d.items() if not (k in LATER and v == LATER[k])}
    if d.get("findings"):
        d["findings"] = {n: {k: v for k, v in r.items() if not (k == "power" and v is None)} for n, r in d["findings"].items()}
    return json.loads(json.dumps(d, sort_keys=True, default=str))


def plan_hash(plan: AnalysisPlan | dict) -> str:
    return hashlib.sha256(json.dumps(plan_dict(plan), sort_keys=True).encode()).hexdigest()


def finished_runs(root: Path) -> int:
    return len(list(root.glob("*/*/done.json"))) + len(list(root.glob("*/.evaluation_finished*")))


def _moved(old: dict, new: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(old) | set(new))
    out = []
    for k in keys:
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _moved(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k}")
    return out


def register(cfg: Any, now: float | None = None) -> dict[str, Any]:
    """Write or update ``<root>/registration.json`` for ``cfg.analysis`` (cfg: a StudyConfig: its ``name``, ``root`` and
    ``analysis``; see the module doc); returns it."""
    root = Path(cfg.root)
    root.mkdir(parents=True, exist_ok=True)
    path = root / FILE
    plan, digest = plan_dict(cfg.analysis), plan_hash(cfg.analysis)
    code = code_state() or {}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    entry = {"sha256": digest, "commit": code.get("commit"), "uncommitted_changes": code.get("uncommitted"),
             "diff_sha256": code.get("diff_sha256"), "at": stamp, "finished_runs_before": finished_runs(root)}
    if not path.is_file():
        reg = {"study": cfg.name, "plan": plan, **entry, "changes": []}
    else:
        try:
            reg = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ValueError(f"{path}: not a registration file ({e}); it is the study's record: restore it from the archive") from e
        last = reg["changes"][-1] if reg.get("changes") else reg
        if last["sha256"] == digest:
            return reg
        reg.setdefault("changes", []).append({**entry, "moved": _moved(last.get("plan", reg["plan"]), plan), "plan": plan})
    atomic_write_text(path, json.dumps(reg, indent=1) + "\n")
    return reg


def changed_rules(reg: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The plan changes made after results existed: each with its moved keys and the plans before and after."""
    if not reg:
        return []
    out, before = [], reg["plan"]
    for ch in reg.get("changes", []):
        if ch.get("finished_runs_before", 0) > 0:
            out.append({"at": ch["at"], "moved": ch["moved"], "before": before, "after": ch["plan"],
                        "finished_runs_before": ch["finished_runs_before"]})
        before = ch["plan"]
    return out


def read_registration(root: str | Path) -> dict[str, Any] | None:
    path = Path(root) / FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
