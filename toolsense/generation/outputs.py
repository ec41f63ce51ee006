"""What a generation run leaves on disk, and how a plain rerun resumes it.

The output directory defaults to ``<output_root>/<catalog hash>-<config hash>``: the same
command always lands in the same place, so rerunning it *is* the resume. The identity (every
setting that changes what gets generated, plus the catalog's content hash) is saved as
``generation_config.json``; a run into a directory made with another identity stops and names
the differing fields. Settings that change only *how fast* items are made (``concurrency``,
retries, time-outs, the endpoint URL, the key's variable name) are not part of it.

``summary.json`` and ``data_card.md`` are computed from the files themselves, so they count
everything across resumes, not just the last run. Rejection rows are keyed by (task, attempt):
a rerun that redoes an item (killed between its attempts, or its ``final`` row torn) replays
the same attempts from the reply cache and writes none of them twice. Each invocation that ends
appends its own counters to ``invocations.jsonl``.

A folder that holds no item and no rejection (a start that failed, an interrupted first
minute) may be claimed by another configuration; its reply cache stays (keyed by the exact
request, it can only be reused for the same request).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from toolsense.catalog import Catalog
from toolsense.utils.config import as_plain
from toolsense.utils.errors import UserError
from toolsense.utils.io import sha256_text
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.paths import atomic_write_text

IDENTITY_FILE = "generation_config.json"
ITEM_FILES = {"rrb": "rrb.jsonl", "mcq": "mcq.jsonl", "qa": "qa.jsonl"}
REJECTED_FILE = "rejected.jsonl"
INVOCATIONS_FILE = "invocations.jsonl"
UNAVAILABLE = "service unavailable (left for a rerun)"


def rejection_key(row: dict) -> tuple:
    """One attempt of one task; a "left for a rerun" row is its own key, so the rerun's real
    outcome of that attempt is still recorded."""
    return row["task_id"], row["attempt"], row.get("reason") == UNAVAILABLE
_SPEED_ONLY = {"output_dir", "output_root", "on_exists", "concurrency", "max_retries", "timeout_s", "base_url",
               "api_key_env", "prices", "logger"}


def _without_speed_only(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _without_speed_only(v) for k, v in d.items() if k not in _SPEED_ONLY}
    if isinstance(d, list):
        return [_without_speed_only(v) for v in d]
    return d


def _llm_identity(llm: dict | None) -> dict | None:
    """An LLM section without the settings of the backend it does not use."""
    if llm is None:
        return None
    unused = {"hf": ("openai_model", "structured_output", "gguf", "local_ctx", "local_threads"),
              "openai": ("model", "gguf", "local_ctx", "local_threads"),
              "local": ("model", "openai_model")}[llm.get("backend")]
    return {k: v for k, v in llm.items() if k not in unused}


def identity(cfg, catalog: Catalog) -> dict:
    """Every setting that decides what is generated, plus the catalog's content hash."""
    conf = _without_speed_only(as_plain(cfg))
    conf["writer"], conf["judge"] = _llm_identity(conf.get("writer")), _llm_identity(conf.get("judge"))
    return {"catalog_hash": catalog.content_hash(), "config": conf}


def default_output_dir(root: str | Path, ident: dict) -> Path:
    digest = sha256_text(json.dumps(ident["config"], sort_keys=True, default=str))
    return Path(root) / f"{ident['catalog_hash'][:10]}-{digest[:10]}"


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else k))
    return out


def produced(out: Path) -> bool:
    """Whether the folder holds any generated item or rejection (not merely a reply cache)."""
    return any((out / f).is_file() and (out / f).read_bytes().strip(b"\x00\n ") for f in (*ITEM_FILES.values(), REJECTED_FILE))


def claim_output_dir(out: Path, ident: dict, write: bool = True) -> None:
    """Save the identity in a fresh directory (``write``), or check that a resumed one was made
    with the same; raise naming each differing field (old -> new) otherwise — unless the folder
    produced nothing yet (:func:`produced`), which the new identity may then take over."""
    path = out / IDENTITY_FILE
    if path.exists():
        old, new = _flat(json.loads(path.read_text())), _flat(json.loads(json.dumps(ident, default=str)))
        diff = [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
        if not diff:
            return
        if produced(out):
            raise UserError(f"{out} holds a generation made with another configuration; differing fields: "
                            + "; ".join(diff) + ". Use another output_dir (or the default, derived from the config).")
    if write:
        atomic_write_text(path, json.dumps(ident, indent=2, sort_keys=True, default=str))


def record_invocation(out: Path, counters: dict) -> list[dict]:
    """Append this invocation's counters to ``invocations.jsonl``; returns every invocation's."""
    store = JsonlStore(out / INVOCATIONS_FILE)
    store.append(counters)
    return store.rows


def _tokens(cache_rows: list[dict], prices: dict[str, dict[str, float]]) -> dict:
    by_stage: dict[str, Counter] = {}
    cost, priced = 0.0, True
    for row in cache_rows:
        c = by_stage.setdefault(row.get("stage") or "unknown", Counter())
        u = row.get("usage") or {}
        c["calls"] += 1
        c["prompt_tokens"] += int(u.get("prompt_tokens") or 0)
        c["completion_tokens"] += int(u.get("completion_tokens") or 0)
        c["truncated"] += row.get("finish_reason") == "length"
        model = str(row.get("model", "")).split(":", 1)[-1].split("@")[0]
        price = prices.get(model)
        if price is None:
            priced = priced and str(row.get("model", "")).startswith("hf:")
            continue
        cost += (u.get("prompt_tokens") or 0) / 1e6 * price["input"] + (u.get("completion_tokens") or 0) / 1e6 * price["output"]
    return {"by_stage": {k: dict(v) for k, v in sorted(by_stage.items())},
            "estimated_cost_usd": round(cost, 4) if priced else None}


def _label_counts(rrb: list[dict]) -> dict[str, float]:
    """Mean rubric scores of accepted RRB items, and how many were relabelled by the
    false-negative audit or got clones added to their gold."""
    judged = [row["judge"] for row in rrb if row.get("judge")]
    out: dict[str, float] = {}
    for k in sorted({k for j in judged for k in j["scores"]}):
        out[f"gen/rrb/rubric_mean/{k}"] = round(sum(j["scores"][k] for j in judged) / len(judged), 3)
    out["gen/rrb/relabelled_items"] = sum(bool(j.get("relabelled")) for j in judged)
    out["gen/rrb/relabelled_tools"] = sum(len(j.get("relabelled", [])) for j in judged)
    out["gen/rrb/clones_added_to_gold"] = sum(len(row.get("clones_added") or []) for row in rrb)
    return out


def summarise(out: Path, stores: dict[str, JsonlStore], cache_rows: list[dict], prices: dict, run_stats: dict,
              invocations: list[dict] = ()) -> dict:
    """Cumulative counts from the files: accepted per tier/kind, final rejections, every
    rejection reason (each (task, attempt) once, even in a file an older version wrote twice),
    QA Yes/No balance, token usage and cost, ``gen/llm_calls`` (= the cache's rows, the same
    count as ``usage.by_stage.*.calls``) and ``gen/llm_cache_hits`` (summed over the
    ``invocations`` that ended); plus this run's ``run_stats`` (``skipped_done``, ``left_for_rerun``,
    ...) and this run's calls and hits under ``gen/this_run/``."""
    s: Counter = Counter()
    for row in stores["rrb"]:
        s[f"gen/rrb/{row['complexity']}/accepted"] += 1
    for kind in ("mcq", "qa"):
        s[f"gen/{kind}/accepted"] += len(stores[kind])
    for row in stores["qa"]:
        s[f"gen/qa/answer_{row['answer'].lower()}"] += 1
    s.update(_label_counts(stores["rrb"].rows))
    reasons: Counter = Counter()
    rejected = stores["rejected"]
    for row in (rejected.by_key.values() if rejected.by_key else rejected.rows):
        reasons[row["reason"]] += 1
        if row.get("final"):
            kind, tier = row["task_id"].split("-")[:2]
            s[f"gen/rrb/{tier}/rejected" if kind == "rrb" else f"gen/{kind}/rejected"] += 1
    summary: dict[str, Any] = dict(sorted(s.items()))
    this_run = dict(invocations[-1]) if invocations else {}
    summary.update({f"gen/{k}": v for k, v in run_stats.items()})
    summary["gen/llm_calls"] = len(cache_rows)
    summary["gen/llm_cache_hits"] = sum(int(inv.get("llm_cache_hits", 0)) for inv in invocations)
    summary.update({f"gen/this_run/{k}": this_run[k] for k in ("llm_calls", "llm_cache_hits") if k in this_run})
    summary["rejection_reasons"] = dict(reasons.most_common())
    summary["usage"] = _tokens(cache_rows, prices)
    return summary


def nothing_made(summary: dict) -> str | None:
    """Why a run made nothing, in one line (None when any item was accepted, in this or an
    earlier invocation into the folder): items left for a rerun (the service stayed
    unavailable), items all rejected, or nothing planned. generate.py then exits non-zero."""
    if summary.get("skipped") or sum(v for k, v in summary.items() if k.endswith("/accepted")):
        return None
    rejected = sum(v for k, v in summary.items() if k.endswith("/rejected"))
    left = summary.get("gen/left_for_rerun", 0)
    if left:
        error = summary.get("gen/this_run/last_service_error") or "see rejected.jsonl"
        return (f"made nothing: {left} items left for a rerun because the service stayed unavailable ({error}), "
                f"{rejected} rejected for good; fix the endpoint (writer.base_url) and rerun the same command to resume")
    if rejected:
        top, n = next(iter(summary["rejection_reasons"].items()))
        return f"made nothing: all {rejected} items were rejected for good (most often, {n}x: {top}); see rejected.jsonl"
    return "made nothing: no item was planned (rrb_per_tier, n_probes and tasks leave nothing to make from this catalog)"


def write_summary(out: Path, summary: dict, ident: dict, elapsed_s: float) -> None:
    """``summary.json`` (without ``output_dir``: a file names no machine path) and ``data_card.md``."""
    (out / "summary.json").write_text(json.dumps({k: v for k, v in summary.items() if k != "output_dir"}, indent=2))
    (out / "data_card.md").write_text(data_card(summary, ident, elapsed_s))


def data_card(summary: dict, ident: dict, elapsed_s: float) -> str:
    cfg = ident["config"]
    lines = ["# Data card", "", f"Catalog content hash `{ident['catalog_hash'][:16]}`; seed {cfg.get('seed')}.", "",
             "| benchmark | accepted | rejected (final) |", "|---|---|---|"]
    for tier in ("easy", "medium", "hard"):
        if f"gen/rrb/{tier}/accepted" in summary or f"gen/rrb/{tier}/rejected" in summary:
            lines.append(f"| RRB {tier} | {summary.get(f'gen/rrb/{tier}/accepted', 0)} | {summary.get(f'gen/rrb/{tier}/rejected', 0)} |")
    for kind in ("mcq", "qa"):
        lines.append(f"| {kind.upper()} | {summary.get(f'gen/{kind}/accepted', 0)} | {summary.get(f'gen/{kind}/rejected', 0)} |")
    rubric = ", ".join(f"{k.rsplit('/', 1)[1]} {v}" for k, v in summary.items() if k.startswith("gen/rrb/rubric_mean/"))
    lines += ["", f"QA answers: {summary.get('gen/qa/answer_yes', 0)} Yes / {summary.get('gen/qa/answer_no', 0)} No.", "",
              f"RRB labels: judge rubric means {rubric or 'n/a'}; {summary.get('gen/rrb/relabelled_items', 0)} items relabelled "
              f"({summary.get('gen/rrb/relabelled_tools', 0)} tools added by the false-negative audit); "
              f"{summary.get('gen/rrb/clones_added_to_gold', 0)} clones added to gold; "
              f"{summary.get('gen/rrb/clones_kept_out_of_pool', 0)} clones kept out of pools (this run's plan).", "",
              "## Models and parameters", "",
              "Served model ids (the endpoint's `GET /v1/models`): " + (", ".join(
                  f"{k.rsplit('/', 1)[1]} `{v}`" for k, v in summary.items() if k.startswith("gen/served_model/")) or "n/a") + ".",
              "", "```json", json.dumps({k: cfg.get(k) for k in ("writer", "judge", "judge_enabled",
              "rrb_per_tier", "n_probes", "pool_k", "rubric_min", "fn_policy", "clones", "dedupe_cosine", "purpose", "exclude",
              "max_attempts")}, indent=2, default=str), "```", "",
              "## Rejection reasons (all attempts)", ""]
    lines += [f"- {n} × {r}" for r, n in summary["rejection_reasons"].items()] or ["- none"]
    usage = summary["usage"]
    lines += ["", "## Tokens", "", "| stage | calls | prompt tokens | completion tokens | truncated |", "|---|---|---|---|---|"]
    for stage, c in usage["by_stage"].items():
        lines.append(f"| {stage} | {c.get('calls', 0)} | {c.get('prompt_tokens', 0)} | {c.get('completion_tokens', 0)} "
                     f"| {c.get('truncated', 0)} |")
    cost = usage["estimated_cost_usd"]
    lines += ["", f"Estimated cost: {'n/a (a model has no price in config)' if cost is None else f'${cost:.4f}'}; "
              f"last run's wall time {elapsed_s:.1f} s.", ""]
    return "\n".join(lines)
