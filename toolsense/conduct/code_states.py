"""The code state each finished run of a study recorded (done.json ``code``: the commit, and a hash of any
uncommitted diff; utils/io.py), and the one each of its evaluations recorded (results.json ``git_sha``, ``-dirty``
where the tree had uncommitted changes), grouped, against the commit its plan was registered at."""

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
    if len(rows) == 1 and not unknown:
        lead = (f"All {n} finished runs" if n > 1 else "The 1 finished run") + " ran on one code state."
    elif not groups:
        lead = f"None of the {n} finished runs recorded its code state in done.json."
    else:
        lead = f"{n} finished runs ran on {_states(len(rows))}."
    return lead + "\n\n" + markdown_table(["code state", "vs the registration", "runs", "which"], rows) + "\n"


def evaluation_states(root: str | Path, registered_commit: str | None = None) -> str:
    """Every evaluation of a finished run (a ``results.json`` beside its ``samples.jsonl`` under ``<run>/eval/``)
    grouped by the ``git_sha`` it recorded: an evaluation rerun after the training (a benchmark re-scored at a later
    commit) shows here, also for runs whose done.json kept no code state. Per run, the benchmarks (with their stage)
    each state scored."""
    groups: dict[str, dict[str, set[str]]] = {}
    counts: dict[str, int] = {}
    for done in sorted(Path(root).glob("*/*/done.json")):
        run, ev = f"{done.parent.parent.name}/{done.parent.name}", done.parent / "eval"
        for res in sorted(ev.rglob("results.json")):
            if not (res.parent / "samples.jsonl").is_file():
                continue  # an aggregate over the benchmarks, not an evaluation of its own
            sha = str((json.loads(res.read_text(encoding="utf-8")) or {}).get("git_sha") or "")
            part = res.parent.parent.relative_to(ev).as_posix()  # [stage1/]<benchmark>
            groups.setdefault(sha, {}).setdefault(run, set()).add(part)
            counts[sha] = counts.get(sha, 0) + 1
    n = sum(counts.values())
    if not n:
        return ""
    reg = (registered_commit or "")[:10]
    dirty = sum(1 for sha in groups if sha.endswith("-dirty"))
    rows = []
    for sha, runs in sorted(groups.items(), key=lambda kv: (not kv[0], kv[0])):
        commit, is_dirty = sha.removesuffix("-dirty")[:10], sha.endswith("-dirty")
        state = "not recorded" if not sha else f"`{commit}`" + (" + uncommitted changes" if is_dirty else "")
        vs = "—" if not sha or not reg else "the registration's" if commit == reg and not is_dirty else "other than the registration's"
        which = "; ".join(f"{r} ({', '.join(sorted(parts))})" for r, parts in sorted(runs.items()))
        rows.append([state, vs, str(counts[sha]), which])
    if len(rows) == 1:
        lead = f"All {n} evaluations of the finished runs ran on one code state." if "" not in groups else \
            f"None of the {n} evaluations of the finished runs recorded its code state."
    else:
        lead = (f"{n} evaluations of the finished runs (results.json beside samples.jsonl) ran on {_states(len(rows))}"
                + (f", {dirty} of them with uncommitted changes (git_sha `-dirty` names the commit, not the changes; "
                   "a diff a registered study kept is named by its runs' done.json, above)" if dirty else "") + ".")
    return lead + "\n\n" + markdown_table(["code state", "vs the registration", "evaluations", "runs (benchmarks scored)"], rows) + "\n"


def _states(n: int) -> str:
    return f"{n} code state{'s' * (n != 1)}"
