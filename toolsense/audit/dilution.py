"""Dilution sweeps: how fast a localized signal fades as more trace text surrounds it.

Both sweeps start from the *probe tool* (``dilution.tool``; default the top PT2D tool).

(a) real - the probe's section, then the other tools' sections appended one at a time in
``dilution.real_order``. ``auto`` is the paper's order: the probe, then the other tools in
trace order (probe = tool 3 of five: sections 3, then 1, 2, 4, 5).
(b) synthetic - the probe's section plus K label-independent sections at random positions,
mean +- sd over seeds. Each inserted section is drawn (any record, regardless of label) from the
*pool*: by default only the non-leaky tools - tools other than the probe whose own AUROC is
near chance (``pool_rule``) - so the inserted text carries no label signal of its own. Each is
tiled or cut to a target length in *characters* (``length_match``; the paper's sections average
1,845.9 characters), not words.

Same TF-IDF + LR as PT2D. Rows are stored with a signature of the resolved order, pool and
length rule, so a changed setting never reuses stale rows."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, Optional, Sequence, Union

import numpy as np
from tqdm.auto import tqdm

from toolsense.audit.pt2d import FEATURES, PT2DConfig, fit_score
from toolsense.audit.stats import UNDEFINED, auroc_ci, json_safe, value
from toolsense.audit.traces import TraceSet
from toolsense.utils.config import NON_EMPTY, Seed
from toolsense.utils.errors import ConfigError
from toolsense.utils.jsonl import JsonlStore

ORDER_RULES = {"auto": "the probe tool, then the other tools in trace order (the paper's order)",
               "ranking": "the probe tool, then the other tools by their PT2D AUROC, highest first"}
POOL_RULES = {"non_leaky": "tools other than the probe whose own eval AUROC ({features}) has a CI containing 0.5 "
                           "and |A_tool - 0.5| <= {gap}",
              "all_other": "every tool other than the probe"}
LENGTH_RULES = {"probe": "each inserted section cut or tiled to the character length of the record's probe section",
                "mean": "each inserted section cut or tiled to the mean character length of all non-empty tool sections"}


@dataclass
class DilutionConfig:
    enabled: bool = True
    features: str = "char_3_5"
    """PT2D feature set used for both sweeps (and for the pool's per-tool AUROCs)."""
    tool: Optional[str] = None
    """The probe tool both sweeps start from; None = the top PT2D tool."""
    real_order: Union[Literal["auto", "ranking"], list[Union[str, int]]] = "auto"
    """Real sweep order. auto = the paper's: the probe, then the others in trace order (probe =
    tool 3 of 5 gives 3, 1, 2, 4, 5); ranking = the probe, then the others by PT2D AUROC; or an
    explicit list of tool names or 1-based trace positions, e.g. [3, 1, 2, 4, 5]."""
    synthetic_pool: Union[Literal["non_leaky", "all_other"], list[str]] = "non_leaky"
    """Tools the synthetic sections are drawn from: non_leaky (pool rule below), all_other, or a list of names."""
    pool_max_gap: float = 0.1
    """non_leaky: a tool qualifies when the bootstrap CI of its own eval AUROC contains 0.5 and
    |A_tool - 0.5| <= pool_max_gap (both: a wide CI alone does not admit a 0.62 tool; without a
    CI, stats.n_boot=0, the gap alone decides)."""
    length_match: Union[Literal["probe", "mean"], int] = "probe"
    """Target length of an inserted section, in characters: probe (the record's probe section),
    mean (mean non-empty tool section over the data; 1,845.9 in the paper), or a number."""
    ks: list[int] = field(default_factory=lambda: [0, 1, 2, 5, 10, 20])
    seeds: Annotated[list[Seed], NON_EMPTY] = field(default_factory=lambda: [0, 1, 2, 3, 4])

    def __post_init__(self) -> None:
        FEATURES.get(self.features)
        if any(k < 0 for k in self.ks):
            raise ValueError(f"dilution.ks must be >= 0, got {self.ks}")
        if isinstance(self.real_order, str):
            if self.real_order not in ORDER_RULES:
                raise ValueError(f"dilution.real_order must be one of {sorted(ORDER_RULES)} or a list, got {self.real_order!r}")
        elif not self.real_order or any(isinstance(x, bool) or not isinstance(x, (str, int)) or (isinstance(x, int) and x < 1)
                                        for x in self.real_order):
            raise ValueError(f"dilution.real_order: a list needs tool names or 1-based positions, got {self.real_order!r}")
        if isinstance(self.synthetic_pool, str) and self.synthetic_pool not in POOL_RULES:
            raise ValueError(f"dilution.synthetic_pool must be one of {sorted(POOL_RULES)} or a list of tools, "
                             f"got {self.synthetic_pool!r}")
        if not 0 <= self.pool_max_gap <= 0.5:
            raise ValueError(f"dilution.pool_max_gap must be in [0, 0.5], got {self.pool_max_gap}")
        if isinstance(self.length_match, str) and self.length_match not in LENGTH_RULES or \
                not isinstance(self.length_match, str) and (isinstance(self.length_match, bool) or self.length_match < 1):
            raise ValueError(f"dilution.length_match must be probe, mean or a character count >= 1, got {self.length_match!r}")


def resolve_real_order(spec, probe: str, tools: Sequence[str], ranking: Sequence[str]) -> list[str]:
    """The real sweep's tool order from ``dilution.real_order`` (see DilutionConfig)."""
    if spec == "auto":
        return [probe] + [t for t in tools if t != probe]
    if spec == "ranking":
        return [probe] + [t for t in ranking if t != probe]
    order = []
    for x in spec:
        if isinstance(x, int):
            if x > len(tools):
                raise ConfigError(f"dilution.real_order: position {x} is past the {len(tools)} tools {list(tools)}")
            x = tools[x - 1]
        if x not in tools:
            raise ConfigError(f"dilution.real_order names unknown tool {x!r}; tools are {list(tools)}")
        order.append(x)
    if len(set(order)) < len(order):
        raise ConfigError(f"dilution.real_order repeats a tool: {order}")
    return order


def select_pool(cfg: DilutionConfig, probe: str, tools: Sequence[str], tool_auroc: dict[str, dict]) -> dict:
    """``{"rule", "tools", "excluded"}``: the synthetic pool and why each other tool is out.
    ``tool_auroc`` maps a tool to its own eval AUROC dict (auroc, lo, hi) for ``cfg.features``."""
    others = [t for t in tools if t != probe]
    if not isinstance(cfg.synthetic_pool, str):
        unknown = [t for t in cfg.synthetic_pool if t not in tools]
        if unknown:
            raise ConfigError(f"dilution.synthetic_pool names unknown tool(s) {unknown}; tools are {list(tools)}")
        return {"rule": f"listed: {list(cfg.synthetic_pool)}", "tools": list(cfg.synthetic_pool),
                "excluded": {t: "not listed" for t in others if t not in cfg.synthetic_pool}}
    rule = POOL_RULES[cfg.synthetic_pool].format(features=cfg.features, gap=cfg.pool_max_gap)
    if cfg.synthetic_pool == "all_other":
        return {"rule": rule, "tools": others, "excluded": {}}
    pool, excluded = [], {}
    for t in others:
        a = tool_auroc[t]
        ci_has_chance = a["lo"] <= 0.5 <= a["hi"] if a["lo"] is not None else True  # no CI (n_boot=0): the gap decides
        if a["auroc"] is None:
            excluded[t] = f"AUROC undefined ({a.get('undefined', UNDEFINED)})"
        elif ci_has_chance and abs(a["auroc"] - 0.5) <= cfg.pool_max_gap:
            pool.append(t)
        else:
            excluded[t] = f"leaky: AUROC {a['auroc']:.3f} [{value(a['lo']):.3f}, {value(a['hi']):.3f}]"
    if not pool:
        raise ConfigError(f"dilution.synthetic_pool=non_leaky: no tool other than {probe!r} is near chance ({excluded}); "
                          "raise dilution.pool_max_gap or set dilution.synthetic_pool=all_other")
    return {"rule": rule, "tools": pool, "excluded": excluded}


def match_chars(text: str, n_chars: int) -> str:
    """``text`` tiled (joined by single spaces) or cut to exactly ``n_chars`` characters."""
    if n_chars <= 0 or not text:
        return ""
    reps = -(-(n_chars + 1) // (len(text) + 1))
    return " ".join([text] * reps)[:n_chars]


def target_lengths(traces: TraceSet, probe: str, rule) -> np.ndarray:
    """Per record, the character length every inserted section is matched to."""
    if rule == "probe":
        return np.array([len(s) for s in traces.sections(probe)])
    if rule == "mean":
        lens = [len(s) for t in traces.tools for s in traces.sections(t) if s.strip()]
        return np.full(len(traces), int(round(float(np.mean(lens)))) if lens else 0)
    return np.full(len(traces), int(rule))


def diluted_texts(traces: TraceSet, tool: str, k: int, rng: np.random.Generator, pool_tools: Sequence[str],
                  lengths: np.ndarray) -> list[str]:
    """Per record: ``tool``'s section plus ``k`` pool sections matched to ``lengths`` characters, shuffled."""
    pool = [s for t in pool_tools for s in traces.sections(t) if s.strip()]
    if k and not pool:
        raise ValueError(f"dilution: the synthetic pool {list(pool_tools)} has no non-empty sections to draw from")
    out = []
    for target, n in zip(traces.sections(tool), lengths):
        parts = [target] + [match_chars(pool[i], int(n)) for i in rng.integers(0, len(pool), size=k)]
        out.append("\n".join(parts[i] for i in rng.permutation(len(parts))))
    return out


def real_sweep(traces: TraceSet, fit: np.ndarray, ev: np.ndarray, order: Sequence[str], features: str,
               pt2d: PT2DConfig, stats, store: JsonlStore, sig: str = "") -> list[dict]:
    """Row k: AUROC of the first k tools of ``order`` concatenated."""
    y, rows = traces.labels, []
    for k in tqdm(range(1, len(order) + 1), desc="dilution (real)", leave=False):
        key = ("real", k, 0, sig)
        if store.get(key) is None:
            scores, _ = fit_score(traces.concatenated(order[:k]), y, fit, features, pt2d.C, pt2d.min_df, pt2d.max_features)
            res = auroc_ci(y[ev], scores[ev], stats.n_boot, stats.level, stats.seed)
            store.append({"sweep": "real", "k": k, "seed": 0, "sig": sig, "tools": list(order[:k]), **res.as_dict()})
        rows.append(store.get(key))
    return rows


def synthetic_sweep(traces: TraceSet, fit: np.ndarray, ev: np.ndarray, tool: str, ks: Sequence[int], seeds: Sequence[int],
                    features: str, pt2d: PT2DConfig, store: JsonlStore, pool_tools: Sequence[str], lengths: np.ndarray,
                    sig: str = "") -> list[dict]:
    """One row per K: mean and sd of the eval AUROC over seeds (per-seed rows go to the store)."""
    y, summary = traces.labels, []
    for k, seed in tqdm([(k, s) for k in ks for s in seeds], desc="dilution (synthetic)", leave=False):
        if store.get(("synthetic", k, seed, sig)) is None:
            texts = diluted_texts(traces, tool, k, np.random.default_rng(seed), pool_tools, lengths)
            scores, _ = fit_score(texts, y, fit, features, pt2d.C, pt2d.min_df, pt2d.max_features)
            res = auroc_ci(y[ev], scores[ev], n_boot=0)
            store.append({"sweep": "synthetic", "tool": tool, "k": k, "seed": seed, "sig": sig, **res.as_dict()})
    for k in ks:
        vals = np.array([value(store.get(("synthetic", k, s, sig))["auroc"]) for s in seeds])
        row = {"k": k, "mean": float(vals.mean()), "sd": float(vals.std(ddof=1)) if len(vals) > 1 else 0.0,
               "per_seed": vals.round(4).tolist()}
        summary.append(json_safe(row) | ({"undefined": UNDEFINED} if np.isnan(vals).any() else {}))
    return summary


def tool_aurocs(traces: TraceSet, fit, ev, features: str, pt2d: PT2DConfig, stats, pt2d_rows: Sequence[dict]) -> dict[str, dict]:
    """Each tool's own eval AUROC (with CI) on ``features``: from the PT2D rows when they hold it,
    else fit here."""
    out = {r["view"]: r["auroc"]["all"] for r in pt2d_rows if r["features"] == features and r["view"] != "full"}
    for t in traces.tools:
        if t not in out:
            scores, _ = fit_score(traces.sections(t), traces.labels, fit, features, pt2d.C, pt2d.min_df, pt2d.max_features)
            out[t] = auroc_ci(traces.labels[ev], scores[ev], stats.n_boot, stats.level, stats.seed).as_dict()
    return out


def run_dilution(traces: TraceSet, fit, ev, cfg: DilutionConfig, pt2d: PT2DConfig, ranking: Sequence[str], stats,
                 out_path: Path, pt2d_rows: Sequence[dict] = ()) -> dict:
    """Both sweeps; the result names the probe, the append order and its rule, the pool and its
    rule (with each excluded tool's AUROC), and the length matching with its target in characters."""
    probe = cfg.tool or ranking[0]
    if probe not in traces.tools:
        raise ConfigError(f"dilution.tool={probe!r} is not a tool of the traces {traces.tools}")
    order = resolve_real_order(cfg.real_order, probe, traces.tools, ranking)
    pool = select_pool(cfg, probe, traces.tools,
                       tool_aurocs(traces, fit, ev, cfg.features, pt2d, stats, pt2d_rows)
                       if cfg.synthetic_pool == "non_leaky" else {})
    lengths = target_lengths(traces, probe, cfg.length_match)
    length_rule = LENGTH_RULES[cfg.length_match] if isinstance(cfg.length_match, str) else \
        f"each inserted section cut or tiled to {cfg.length_match} characters"
    sig = hashlib.sha256(json.dumps([cfg.features, order, pool["tools"], lengths.tolist()]).encode()).hexdigest()[:12]
    store = JsonlStore(out_path, key=lambda r: (r["sweep"], r["k"], r["seed"], r.get("sig", "")))
    rule = ORDER_RULES[cfg.real_order] if isinstance(cfg.real_order, str) else "explicit list"
    return {"features": cfg.features, "tool": probe, "order": order,
            "real_order": {"setting": cfg.real_order, "rule": rule, "order": order},
            "synthetic_pool": {"setting": cfg.synthetic_pool, **pool},
            "length_match": {"setting": cfg.length_match, "unit": "characters", "rule": length_rule,
                             "mean_target_chars": float(lengths.mean()) if len(lengths) else 0.0},
            "real": real_sweep(traces, fit, ev, order, cfg.features, pt2d, stats, store, sig),
            "synthetic": synthetic_sweep(traces, fit, ev, probe, cfg.ks, cfg.seeds, cfg.features, pt2d, store,
                                         pool["tools"], lengths, sig)}
