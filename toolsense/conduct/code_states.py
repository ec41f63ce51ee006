"""The code state each finished run of a study recorded (done.json ``code``: the commit, and a hash of any
uncommitted diff; utils/io.py), grouped, against the commit its plan was registered at."""

from __future__ import annotations

import json
from pathlib import Path

from toolsense.reporting.tables import markdown_table


def code_states(root: str | Path, registered_commit: str | None = None) -> str:
    """Every finished run under ``root/<sweep>/<run>/done.json`` grouped by code state; a state other than the
    registration's commit is named as such, a run that kept none is listed as not recorded."""
    groups: dict[tuple[str, str], list[str]] = {}
    unknown = []
    for done in sorted(Path(root).glob("*/*/done.json")):
        run = f"{done.parent.parent.name}/{done.parent.name}"
        code = (json.loads(done.read_text(encoding="utf-8")) or {}).get("code") or {}
        if not code.get("commit"):
            unknown.append(run)
            continue
        diff = code.get("diff_sha256") or ("uncommitted, no diff kept" if code.get("uncommitted") else "")
        groups.setdefault((str(code["commit"])[:10], diff[:12]), []).append(run)
    if not groups and not unknown:
        return "No run has finished.\n"
    reg = (registered_commit or "")[:10]
    rows = [[f"`{commit}`" + (f" + diff `{diff}`" if diff else ""),
             "the registration's" if commit == reg and not diff else "other than the registration's" if reg else "—",
             str(len(runs)), ", ".join(runs)] for (commit, diff), runs in groups.items()]
    if unknown:
        rows.append(["not recorded (a run finished before done.json kept its code)", "—", str(len(unknown)), ", ".join(unknown)])
    n = sum(len(r) for r in groups.values()) + len(unknown)
    lead = f"All {n} finished runs ran on one code state." if len(rows) == 1 and not unknown else \
        f"{n} finished runs ran on {len(rows)} code states."
    return lead + "\n\n" + markdown_table(["code state", "vs the registration", "runs", "which"], rows) + "\n"
