"""The real-tools study's catalog (``catalog=study_tools``): about a thousand ToolBench APIs of the
ToolSense release, chosen so that the released benchmarks can be scored on it whole.

A catalog of 47,000 tools cannot be trained on 2 CPU cores in a day; a random slice of it would
leave most released RRB items with a gold tool outside the index. This builder picks, from
``catalogs/toolsense_release.jsonl`` (every tool the released benchmarks name):

1. ``probe``: every tool of the released MCQ / QA items (``released/mcq_dev.jsonl``,
   ``qa_dev.jsonl``), so findings 4 and 5 are tested on all of them (with ``probe_items=N``: the
   tools of the first N items of each, the items a ``benchmarks.mcq.limit=N`` run scores);
2. ``rrb_gold``: the gold tools of released RRB items (``released/rrb_dev.jsonl``), item by item,
   always the item that needs the fewest tools not yet in (ties in a seeded order), while its gold
   tools fit under ``n_tools``; an item enters whole or not at all;
3. ``pool_negative``: the rest of ``n_tools`` from the chosen items' 14-tool ``analyzed_tools``
   pools (the tools the RRB authors judged closest to the query): hard negatives, one item at a
   time in a seeded order, each item's pool in a seeded order, round-robin until full.

Written beside the catalog: ``<out>.coverage.json`` (counts per role, RRB items covered by
complexity, probe items covered, input and output sha256) and ``<stem>.rrb.jsonl``, the covered
RRB items as their original lines: the study's realistic test set (``benchmark=rrb`` on it; it is
"released RRB, N of 500"). Same inputs and seed, same bytes.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Optional

from toolsense.catalog.builders import CATALOG_BUILDERS, build_command, coverage_path
from toolsense.utils.errors import ConfigError, MissingFile
from toolsense.utils.io import DataError, iter_jsonl, sha256_file, sha256_text
from toolsense.utils.paths import atomic_write_text

ROLES = ("probe", "rrb_gold", "pool_negative")
N_TOOLS = 1000
"""Default size: all 243 released RRB dev items (931 tools with the probes' 232) fit, plus hard negatives."""
SEED = 0
INPUTS = {"release": "catalogs/toolsense_release.jsonl", "rrb": "released/rrb_dev.jsonl",
          "mcq": "released/mcq_dev.jsonl", "qa": "released/qa_dev.jsonl"}


def rrb_path(out: str | Path) -> Path:
    """The covered RRB items beside the catalog ``out``: ``<stem>.rrb.jsonl``."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".jsonl") + ".rrb.jsonl")


def _names(value: Any, where: str) -> list[str]:
    """Tool names of an RRB ``tool`` / ``analyzed_tools`` value (a dict, or a list of dicts or names)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for x in items:
        name = x.get("tool_name") if isinstance(x, dict) else x
        if not isinstance(name, str) or "&&" not in name:
            raise DataError(f"{where}: expected tool objects with a 'tool_name' Service&&API, got {str(x)[:80]!r}")
        out.append(name)
    return out


def _order(keys: Iterable[str], seed: int, salt: str) -> list[str]:
    """``keys`` sorted, then shuffled by ``seed`` (stable across Python runs: no hash())."""
    keys = sorted(keys)
    random.Random(f"{seed}:{salt}").shuffle(keys)
    return keys


def select_tools(rrb: list[dict], probe_tools: set[str], n_tools: Optional[int], seed: int) -> tuple[dict[str, str], list[int]]:
    """The chosen tools (name -> role) and the indexes of the RRB items they cover, in the order
    described in the module doc. ``rrb`` items carry ``gold`` and ``pool`` name lists;
    ``n_tools=None`` keeps the probe tools alone (``catalog=study_probe_tools``)."""
    n_tools = len(probe_tools) if n_tools is None else n_tools
    if len(probe_tools) > n_tools:
        raise ConfigError(f"catalog study_tools: n_tools={n_tools} is below the {len(probe_tools)} probe tools")
    roles = {t: "probe" for t in sorted(probe_tools)}
    rank = {k: i for i, k in enumerate(_order((str(i) for i in range(len(rrb))), seed, "items"))}
    left, covered = set(range(len(rrb))), []
    while left:
        best = min(left, key=lambda i: (len(set(rrb[i]["gold"]) - roles.keys()), rank[str(i)]))
        new = sorted(set(rrb[best]["gold"]) - roles.keys())
        if len(roles) + len(new) > n_tools:
            break
        roles.update((t, "rrb_gold") for t in new)
        covered.append(best)
        left.remove(best)
    pools = [[t for t in _order(rrb[i]["pool"], seed, f"pool:{i}") if t not in roles]
             for i in sorted(covered, key=lambda i: rank[str(i)])]
    while len(roles) < n_tools and any(pools):
        for pool in pools:
            while pool and pool[0] in roles:
                pool.pop(0)
            if pool and len(roles) < n_tools:
                roles[pool.pop(0)] = "pool_negative"
    return roles, sorted(covered)


def _read_rrb(path: Path) -> list[dict]:
    out = []
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        if "tool" not in obj or "analyzed_tools" not in obj:
            raise DataError(f"{where}: an RRB item needs fields 'tool' and 'analyzed_tools'")
        out.append({"gold": _names(obj["tool"], f"{where}: field 'tool'"),
                    "pool": _names(obj["analyzed_tools"], f"{where}: field 'analyzed_tools'"),
                    "complexity": obj.get("complexity"), "line": json.dumps(obj, ensure_ascii=False)})
    return out


def _probe_tools(paths: Iterable[Path]) -> dict[str, list[str]]:
    """Probe file name -> the tool name of each of its items, in file order."""
    return {p.name: [_names(obj.get("tool"), f"{p}:{n}: field 'tool'")[0] for n, obj in iter_jsonl(p)] for p in paths}


def _coverage(roles: dict[str, str], rrb: list[dict], covered: list[int], probes: dict[str, list[str]]) -> dict[str, Any]:
    cov_items = [rrb[i] for i in covered]
    negatives = [sum(roles.get(t) == "pool_negative" for t in it["pool"]) for it in cov_items]
    in_pool = [sum(t in roles for t in it["pool"]) for it in cov_items]
    return {
        "n_tools": len(roles),
        "sources": {r: sum(v == r for v in roles.values()) for r in ROLES},
        "rrb_items": {"covered": len(covered), "total": len(rrb),
                      "covered_by_complexity": dict(sorted(Counter(str(it["complexity"]) for it in cov_items).items())),
                      "total_by_complexity": dict(sorted(Counter(str(it["complexity"]) for it in rrb).items())),
                      "pool_tools_in_catalog_mean": round(sum(in_pool) / max(len(in_pool), 1), 2),
                      "pool_negatives_mean": round(sum(negatives) / max(len(negatives), 1), 2)},
        "probe_items": {name: {"covered": sum(t in roles for t in tools), "total": len(tools)}
                        for name, tools in probes.items()},
    }


@CATALOG_BUILDERS.register("study_tools")
def build_study_tools_catalog(data_dir: str | Path, out: str | Path, n_tools: Optional[int] = N_TOOLS,
                              seed: int = SEED, name: str = "study_tools",
                              probe_items: Optional[int] = None) -> dict[str, Any]:
    """Build ``out`` (ToolSense JSONL: the chosen tools' release lines, in release-file order),
    ``<stem>.rrb.jsonl`` (the covered RRB items) and ``<stem>.coverage.json``; returns the coverage.
    ``n_tools=None``: the probe tools alone (no RRB item fits). ``probe_items=N``: the probe tools are
    those of the first N items of each probe file (None: all items)."""
    if probe_items is not None and probe_items < 1:
        raise ValueError(f"catalog {name}: probe_items must be >= 1 or None, got {probe_items}")
    d, out = Path(data_dir), Path(out)
    inputs = {k: d / v for k, v in INPUTS.items()}
    missing = [str(p) for p in inputs.values() if not p.is_file()]
    if missing:
        raise MissingFile(f"catalog {name}: input files missing under {d}: {missing}")
    rrb = _read_rrb(inputs["rrb"])
    probes = {f: tools[:probe_items] for f, tools in _probe_tools([inputs["mcq"], inputs["qa"]]).items()}
    roles, covered = select_tools(rrb, {t for ts in probes.values() for t in ts}, n_tools, seed)
    lines = {obj["tool_name"]: json.dumps(obj, ensure_ascii=False) for _, obj in iter_jsonl(inputs["release"])
             if obj.get("tool_name") in roles}
    absent = sorted(set(roles) - lines.keys())
    if absent:
        raise DataError(f"{inputs['release']}: {len(absent)} tools named by the released benchmarks are not in it, "
                        f"e.g. {absent[:3]}")
    text = "".join(line + "\n" for line in lines.values())
    rrb_text = "".join(rrb[i]["line"] + "\n" for i in covered)
    atomic_write_text(out, text)
    atomic_write_text(rrb_path(out), rrb_text)
    coverage = _coverage(roles, rrb, covered, probes)
    coverage.update(
        n_tools_requested=n_tools, seed=seed, probe_items_per_file=probe_items,
        output={"path": str(out), "sha256": sha256_text(text)},
        rrb_test={"path": str(rrb_path(out)), "sha256": sha256_text(rrb_text), "items": len(covered)},
        inputs={k: {"path": str(p), "sha256": sha256_file(p)} for k, p in inputs.items()},
        command=build_command(name, data_dir, out),
    )
    atomic_write_text(coverage_path(out), json.dumps(coverage, indent=2) + "\n")
    return coverage


@CATALOG_BUILDERS.register("study_probe_tools")
def build_study_probe_tools_catalog(data_dir: str | Path, out: str | Path) -> dict[str, Any]:
    """``catalog=study_probe_tools``: the tools of the released MCQ / QA dev probes alone (232), for
    the probe model's runs (findings 4, 5): a Qwen-0.5B TG-3FM run on 1,000 tools costs ~8 h on
    2 cores, on these ~3.8 h (projected: longer than a session, hence ``study_probe_tools_120``).
    Its ``.rrb.jsonl`` holds only the RRB items whose gold tools are all probe tools; the probe runs
    are not scored on retrieval."""
    return build_study_tools_catalog(data_dir, out, n_tools=None, name="study_probe_tools")


PROBE_ITEMS = 120
"""The probe items the study's probe rows score (``benchmarks.mcq.limit`` / ``benchmarks.qa.limit``)."""


@CATALOG_BUILDERS.register("study_probe_tools_120")
def build_study_probe_tools_120_catalog(data_dir: str | Path, out: str | Path) -> dict[str, Any]:
    """``catalog=study_probe_tools_120``: the tools of the first 120 released MCQ and the first 120 QA
    dev items alone (122 tools; the two files name mostly the same tools in the same order), the
    items ``study=tools``' probe rows score. Half the 232 probe tools, so a Qwen-0.5B TG-3FM run
    (2 + 2 epochs: 68 min measured on one shared core) fits one session: the study's runs cannot carry a half-trained model from
    one machine to the next."""
    return build_study_tools_catalog(data_dir, out, n_tools=None, name="study_probe_tools_120", probe_items=PROBE_ITEMS)
