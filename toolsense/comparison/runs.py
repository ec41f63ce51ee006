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
from typing import Any, Iterable, Sequence

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
    seed: Any = None
    """``trainer.seed`` (what ``identity`` leaves out)."""


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
    seed = (cfg.get("trainer") or {}).get("seed")
    return RunInfo(label, json.dumps(flat, sort_keys=True, default=str), scheme, flat, seed)


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
    ablation sweeping one key, e.g. memorization.formats), the keys whose values tell them apart, as
    ``key=value`` (``stage2.sources.kind=realistic_template``; lists of settings are read key by key, a
    path by its file name, so no label holds dict text). A key that splits the configurations exactly
    as an earlier one does (a source's path beside its kind) is left out; keys are added until the
    labels differ."""
    by_label: dict[str, dict[str, RunInfo]] = {}
    for info in infos:
        by_label.setdefault(info.label, {})[info.identity] = info
    out = {}
    for label, group in by_label.items():
        if len(group) == 1:
            out.update({ident: label for ident in group})
            continue
        flat = {ident: _label_keys(info.config) for ident, info in group.items()}
        keys = sorted({k for f in flat.values() for k in f})
        chosen: list[str] = []
        splits: set[tuple] = set()
        for k in keys:
            split = tuple(json.dumps(f.get(k), default=str) for f in flat.values())
            if len(set(split)) > 1 and _partition(split) not in splits:
                splits.add(_partition(split))
                chosen.append(k)
        shown = chosen[:3]
        while len(shown) < len(chosen) and len({tuple(f.get(k) for k in shown) for f in flat.values()}) < len(flat):
            shown = chosen[: len(shown) + 1]
        for full in (False, True):  # a path by its file name, unless two paths share it
            names = {ident: f"{label} ({', '.join(f'{k}={_short(f.get(k), full)}' for k in shown)})" if shown else label
                     for ident, f in flat.items()}
            if len(set(names.values())) == len(names):
                break
        out.update(names)
    return out


def _partition(values: tuple) -> tuple:
    """How a key splits configurations, whatever its values: each one's index of first appearance."""
    first: dict[Any, int] = {}
    return tuple(first.setdefault(v, len(first)) for v in values)


def _label_keys(config: dict[str, Any]) -> dict[str, Any]:
    """A run's flattened configuration with lists of settings (``stage2.sources``) read key by key:
    ``stage2.sources.kind`` for a one-element list, ``stage2.sources[1].kind`` for a longer one."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                out.update({f"{k}{'' if len(v) == 1 else f'[{i}]'}.{sub}": w for sub, w in _flatten(x).items()})
        else:
            out[k] = v
    return out


def _short(v: Any, full: bool = False) -> str:
    """A value as a label shows it: a list joined by ``+``, a path by its file name (``full``: whole), a
    mapping as ``k:v`` pairs."""
    if isinstance(v, list):
        return "+".join(_short(x, full) for x in v)
    if isinstance(v, dict):
        return ",".join(f"{k}:{_short(w, full)}" for k, w in _flatten(v).items())
    if isinstance(v, str) and "/" in v and not full:
        return v.rstrip("/").rpartition("/")[2]
    return "none" if v is None else str(v)


STAGE2_ONLY = "stage2."
"""Keys a Stage-1 checkpoint does not depend on: runs that differ only here share their Stage 1."""


def stage_info(info: RunInfo, stage: str) -> RunInfo:
    """The run as a ``stage`` row sees it: for Stage 1, its configuration without the Stage-2 keys,
    so arms that differ only in Stage 2 (App. E's realistic queries beside the grid's verbose ones)
    share one Stage-1 configuration and one Stage-1 row."""
    if stage != "stage1" or not info.config:
        return info
    config = {k: v for k, v in info.config.items() if not k.startswith(STAGE2_ONLY)}
    return RunInfo(info.label, json.dumps(config, sort_keys=True, default=str), info.scheme, config, info.seed)


def row_key(res: dict[str, Any]) -> tuple[str, bool, str | None, str]:
    """(configuration key, is_baseline, run directory, stage) of the system behind ``res``: runs
    share a key when their configs differ only in seed (runs.run_info) and the stage is the same."""
    src = res.get("source") or {}
    if "baseline" in src:
        return str(res["system"]), True, None, ""
    if "system" in src:  # a system re-ranking with a model (systems.py): one row per system x model
        model_run = run_dir_of({**res, "source": src.get("model") or {}})
        who = run_info(model_run).label if model_run else str((src.get("model") or {}).get("model"))
        return f"{res['system']} ({who})", False, None, ""
    run = run_dir_of(res)
    if run:
        stage = src.get("stage") or "stage2"
        return stage_info(run_info(run), stage).identity + "|" + stage, False, run, stage
    return str(src.get("model") or res["system"]), False, None, ""


def row_labels(keys: Sequence[tuple[str, bool, str | None, str]]) -> dict[str, dict[str, Any]]:
    """key -> {label, stage, base (the stage-2 row's label), scheme, baseline}."""
    infos = {k[0]: stage_info(run_info(k[2]), k[3]) for k in keys if k[2] is not None}
    names: dict[str, str] = {}
    for stage in {k[3] for k in keys if k[2] is not None}:  # each stage's rows told apart among themselves
        names.update(distinct_labels(i for k, i in infos.items() if k.endswith("|" + stage)))
    meta = {}
    for key, baseline, run, stage in keys:
        if run is None:
            meta[key] = {"label": key, "stage": stage, "base": key, "scheme": None, "baseline": baseline}
            continue
        base = names[infos[key].identity]
        label = base if stage == "stage2" else f"{base}:{stage}"
        meta[key] = {"label": label, "stage": stage, "base": base, "scheme": infos[key].scheme, "baseline": False}
    return meta


def stage1_rows(keys: Sequence[tuple[str, bool, str | None, str]], meta: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``Stage-2 row -> the Stage-1 row of the same runs`` (arms that differ in Stage 2 only share one,
    so it is not always ``<row>:stage1``)."""
    by_run: dict[str, dict[str, str]] = {}
    for key, _, run, stage in keys:
        if run is not None:
            by_run.setdefault(run, {})[stage] = meta[key]["label"]
    return {s["stage2"]: s["stage1"] for s in by_run.values() if "stage1" in s and "stage2" in s}


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


def item_values(result_path: str | Path, metric: str, tier: str | None = None) -> dict[str, tuple[float, float] | float] | None:
    """Per-item values of ``metric`` from the ``samples.jsonl`` beside ``result_path``, keyed by
    item id: probe ``accuracy`` → 0/1 correctness; a debiased probe metric (:data:`DEBIASED`) →
    the item's credit under it; a registered mean metric (``Rc@k``, recall, NDCG, ...;
    metrics/registry.py) → the item's value; a ratio (``IS@k``) → (free-form, constrained) pairs of
    its base metric (IS is a ratio of means). With ``tier``, the items of that tier only (a sample's
    ``tier``). None when the file is absent or the metric has no per-item value (the caller then has no
    interval)."""
    path = Path(result_path).with_name("samples.jsonl")
    if not path.exists():
        return None
    rows = _samples(str(path))
    if tier is not None:
        rows = {i: r for i, r in rows.items() if str(r.get("tier")) == tier}
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
