"""What the comparison table needs to know about a training run and an evaluation's items: the
run's configuration (its ``config.yaml``) with the seed removed, so runs that differ only in
``trainer.seed`` form one configuration; a readable label for that configuration; and the
per-item values an evaluation logged in its ``samples.jsonl`` (for pooled and paired bootstraps).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from toolsense.data.prompts import probe_answers
from toolsense.evaluation.probe_stats import DEBIASED, debiased_correct
from toolsense.metrics.registry import METRICS
from toolsense.utils.io import DataError
from toolsense.utils.paths import portable_text

NOT_CONFIGURATION = ("output_dir", "evaluate", "logger", "launcher")
"""Top-level config.yaml sections that say where/how a run was logged, not what was trained."""
SEED_KEYS = (("trainer", "seed"),)
"""Keys removed before runs are grouped: runs that differ only here are seeds of one configuration."""


@dataclass(frozen=True)
class RunInfo:
    label: str
    """``experiment-tuning`` (the run directory's name without a config.yaml)."""
    identity: str
    """The run's configuration minus seed and logging, as canonical JSON (equal = same configuration)."""
    scheme: str | None
    """``flat`` or ``hierarchical`` (index builder), None when unknown."""
    config: dict[str, Any]
    """The configuration behind ``identity`` (flattened dotted keys)."""


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: d}


@functools.lru_cache(maxsize=None)
def run_info(run: str) -> RunInfo:
    """The run's label, configuration identity and index scheme (config.yaml is read once)."""
    cfg_path = Path(run) / "config.yaml"
    if not cfg_path.exists():
        return RunInfo(Path(run).name, json.dumps({"run": str(Path(run).resolve())}), None, {})
    try:
        cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise DataError(f"{cfg_path}: not valid YAML ({e})") from e
    tuning = (cfg.get("tuning") or {}).get("method")
    label = "-".join(str(x) for x in (cfg.get("experiment"), tuning) if x) or Path(run).name
    flat = {k: v for k, v in _flatten({k: v for k, v in cfg.items() if k not in NOT_CONFIGURATION}).items()
            if tuple(k.split(".")) not in SEED_KEYS}
    # paths as the archive writes them: a run trained here and one restored from an archive are one configuration
    flat = json.loads(portable_text(json.dumps(flat, sort_keys=True, default=str)))
    builder = (cfg.get("index") or {}).get("builder")
    scheme = None if builder is None else ("flat" if builder == "flat" else "hierarchical")
    return RunInfo(label, json.dumps(flat, sort_keys=True, default=str), scheme, flat)


def run_dir_of(result: dict[str, Any]) -> str | None:
    """The training run behind a result (``source.run``), located from where the result lies, so
    an archive unpacked on another machine finds its runs: a relative ``source.run`` (what
    results hold now) is resolved against the results file's folder; the old absolute form (a
    path of the machine that trained it) is read as the results file's nearest ancestor of the
    same name that holds a ``config.yaml`` (``<run>/eval/<bench>/<system>/results.json``), and
    only where none is found as the recorded path itself. None for untrained models and
    baselines. ``result["_path"]`` is the results file (compare.collect sets it)."""
    recorded = (result.get("source") or {}).get("run")
    if not recorded:
        return None
    here = Path(result["_path"]).parent if result.get("_path") else None
    if here is None:
        return str(recorded)
    if not Path(recorded).is_absolute():
        return str((here / recorded).resolve())
    name = Path(recorded).name
    for parent in (here, *here.parents):
        if parent.name == name and (parent / "config.yaml").is_file():
            return str(parent.resolve())
    return str(recorded)


def distinct_labels(infos: Iterable[RunInfo]) -> dict[str, str]:
    """``identity -> row label``: ``experiment-tuning``, and where configurations share it (an
    ablation sweeping one key, e.g. memorization.formats), the keys whose values tell them apart."""
    by_label: dict[str, dict[str, RunInfo]] = {}
    for info in infos:
        by_label.setdefault(info.label, {})[info.identity] = info
    out = {}
    for label, group in by_label.items():
        if len(group) == 1:
            out.update({ident: label for ident in group})
            continue
        keys = sorted({k for i in group.values() for k in i.config})
        differ = [k for k in keys if len({json.dumps(i.config.get(k), default=str) for i in group.values()}) > 1]
        for ident, info in group.items():
            parts = [f"{k}={_short(info.config.get(k))}" for k in differ[:3]]
            out[ident] = f"{label} ({', '.join(parts)})" if parts else label
    return out


def _short(v: Any) -> str:
    return "+".join(map(str, v)) if isinstance(v, list) else str(v)


@functools.lru_cache(maxsize=None)
def _samples(path: str) -> dict[str, dict]:
    rows = {}
    p = Path(path)
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise DataError(f"{p}:{i}: malformed samples line") from None
        if "item_id" not in row:
            raise DataError(f"{p}:{i}: field 'item_id' is missing")
        rows[str(row["item_id"])] = row
    return rows


def item_values(result_path: str | Path, metric: str) -> dict[str, tuple[float, float] | float] | None:
    """Per-item values of ``metric`` from the ``samples.jsonl`` beside ``result_path``, keyed by
    item id: probe ``accuracy`` → 0/1 correctness; a debiased probe metric (:data:`DEBIASED`) →
    the item's credit under it; a registered mean metric (``Rc@k``, recall, NDCG, ...;
    metrics/registry.py) → the item's value; a ratio (``IS@k``) → (free-form, constrained) pairs of
    its base metric (IS is a ratio of means). None when the file is absent or the metric has no
    per-item value (the caller then has no interval)."""
    path = Path(result_path).with_name("samples.jsonl")
    if not path.exists():
        return None
    rows = _samples(str(path))
    parsed = METRICS.parse(metric)
    try:
        if metric == "accuracy":
            return {i: float(bool(r["correct"])) for i, r in rows.items()}
        if metric in DEBIASED:
            return _debiased_values(Path(result_path), rows, metric)
        if parsed is not None:
            m, mode, k = parsed
            if m.aggregation == "ratio":
                base = METRICS.get(str(m.of))
                f, c = base.item_key("f", k), base.item_key("c", k)
                return {i: (float(r["metrics"][f]), float(r["metrics"][c])) for i, r in rows.items()}
            key = m.item_key(mode or "c", k)
            return {i: float(r["metrics"][key]) for i, r in rows.items()}
    except KeyError as e:
        raise DataError(f"{path}: an item lacks field {e.args[0]!r} needed for {metric}") from None
    return None


def _debiased_values(result_path: Path, rows: dict[str, dict], metric: str) -> dict[str, float] | None:
    """Per-item credit of a debiased probe metric (all of a probe's metrics computed once per file)."""
    if not rows or not result_path.exists():
        return None
    credit = _debiased_credits(str(result_path), result_path.stat().st_mtime_ns)
    return dict(zip(rows, credit[metric])) if metric in credit else None


@functools.lru_cache(maxsize=256)
def _debiased_credits(result_path: str, mtime_ns: int) -> dict[str, list[float]]:
    """probe_stats.debiased_correct over a probe's samples; its kind from its results.json."""
    kind = json.loads(Path(result_path).read_text(encoding="utf-8")).get("kind")
    rows = list(_samples(str(Path(result_path).with_name("samples.jsonl"))).values())
    return debiased_correct(rows, kind, probe_answers(kind, len(rows[0].get("scores") or ())))


def gold_majority_rate(result_path: str | Path) -> float | None:
    """Share of the most frequent gold answer among a probe's items (what always answering it
    scores), from samples.jsonl; None without the file."""
    path = Path(result_path).with_name("samples.jsonl")
    if not path.exists():
        return None
    golds = [r.get("gold") for r in _samples(str(path)).values()]
    return max(golds.count(g) for g in set(golds)) / len(golds) if golds else None
