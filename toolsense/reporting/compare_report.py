"""``report.html`` of a comparison (compare.py): the page a researcher opens to compare runs.

- **One table per benchmark** (and per probe, tier group, retention, drift), one row per
  configuration — seeds pooled, the number of seeds and their SD shown, a one-seed configuration
  marked — each cell ``value [lo, hi]`` with the significance superscripts of comparison.md, the
  letters' legend and Cohen's d under the tables. Every number's cell carries ``data-row``,
  ``data-col`` and its exact ``data-value`` / ``data-lo`` / ``data-hi`` from comparison.json.
- **The plots** compare.py rendered (plots.py's PNGs), embedded.
- **A per-query side-by-side view**: query, gold, each configuration's top-k with gold hits marked
  and the seeds that hit, filterable by benchmark, tier, probe mode and "A right, B wrong" (right: every
  seed of A hits at k; wrong: no seed of B does), searchable; the state in the URL fragment. A probe
  item gets one card per mode (token / control / card), each counting that mode's runs.

Rendered from compare.comparison's dict and the results / samples files it names (``sources``),
never from comparison code: significance markers, their legend and the Cohen's d line come in as
text (``notes``). Everything is inline; nothing is fetched.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from toolsense.metrics.registry import METRICS
from toolsense.reporting.html_assets import COMPARE_JS, CSS
from toolsense.reporting.html_report import MAX_BEAMS, ks_of
from toolsense.reporting.tables import benchmark_label
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.paths import atomic_write_text
from toolsense.utils.publish import load_published_json

MAX_ITEMS = 200
"""Query cards drawn at once (the count of all that match is shown; a filter narrows them)."""


def column_groups(columns: Sequence[str]) -> dict[str, list[str]]:
    """``table caption -> its columns``: a column ``<group> <metric>`` joins ``<group>`` (a
    benchmark, a probe and mode, a drift pair); tier columns ``<bench> [<tier>] <m>`` join
    ``<bench> by tier``. Order of first appearance."""
    groups: dict[str, list[str]] = {}
    for col in columns:
        head = col.rsplit(" ", 1)[0] if " " in col else col
        if " [" in head:
            head = head.split(" [")[0] + " by tier"
        groups.setdefault(head, []).append(col)
    return groups


def _scale(col: str) -> tuple[float, int, bool]:
    """(multiplier, digits, signed) of a column: percent, a ratio metric (IS, metrics/registry.py) and
    the drift ratio as ratios, drift with 4 digits."""
    metric = col.rsplit(" ", 1)[-1]
    if col.startswith("drift "):
        return 1.0, 4, False
    if METRICS.scale_of(metric) == "ratio" or metric == "ratio":
        return 1.0, 2, False
    return 100.0, 1, col.startswith("retention ")


def _attr(v: Any) -> str:
    return "" if v is None else html.escape(repr(v))


def cell_html(row: str, col: str, est: Mapping[str, Any] | None, marker: str = "") -> str:
    """One ``<td>``: value (+ significance superscript), ``± sd`` over seeds, ``[lo, hi]``, a probe's
    chance, the few-hit / one-answer flags; the exact numbers in data attributes."""
    key = f'data-row="{html.escape(row)}" data-col="{html.escape(col)}"'
    if not est or est.get("value") is None:
        return f'<td {key}>—</td>'
    s, d, signed = _scale(col)
    one = bool(est.get("one_seed"))
    parts = [f'{est["value"] * s:{"+" if signed else ""}.{d}f}']
    if marker:
        parts.append(f'<sup class="sig">{html.escape(marker.strip())}</sup>')
    if est.get("sd") is not None:
        parts.append(f' <span class="sd">± {est["sd"] * s:.{d}f}</span>')
    if est.get("lo") is not None and est.get("hi") is not None:
        parts.append(f'<span class="ci">[{est["lo"] * s:.{d}f}, {est["hi"] * s:.{d}f}]</span>')
    if est.get("chance") is not None:
        parts.append(f'<span class="ci">chance {100 * est["chance"]:.0f}'
                     + (f', maj. {100 * est["majority_rate"]:.0f}' if est.get("majority_rate") is not None else "") + "</span>")
    if est.get("few_hits"):
        parts.append(f'<span class="flag">⚑ {est.get("hits")} hits</span>')
    if est.get("flag"):
        parts.append(f'<span class="flag">{html.escape(str(est["flag"]))}</span>')
    data = (f' data-value="{_attr(est["value"])}" data-lo="{_attr(est.get("lo"))}" data-hi="{_attr(est.get("hi"))}"'
            f' data-sd="{_attr(est.get("sd"))}" data-n-seeds="{_attr(est.get("n_seeds"))}"')
    cls = ' class="one-seed" title="one seed: one run"' if one else ""
    return f'<td {key}{data}{cls}>{"".join(parts)}</td>'


def n_seeds(comp: Mapping[str, Any], row: str) -> int | None:
    """Seeds behind a row (the most any of its cells pools; None for a baseline)."""
    if row in comp.get("baselines", []):
        return None
    ns = [c.get("n_seeds") or 1 for c in comp["cells"].get(row, {}).values() if c and c.get("value") is not None]
    return max(ns, default=1)


def config_tables(comp: Mapping[str, Any], notes: Mapping[str, Any]) -> str:
    """One table per column group; rows = configurations, with their letter and seed count."""
    letters, markers = notes.get("letters") or {}, notes.get("markers") or {}
    out = []
    for caption, cols in column_groups(comp["columns"]).items():
        base = caption.removesuffix(" by tier")
        head = "".join(f'<th>{html.escape(c[len(base):].strip() if c.startswith(base) else c)}</th>' for c in cols)
        body = []
        for row in comp["rows"]:
            n = n_seeds(comp, row)
            tag = f'<span class="letter">{letters[row]}</span> ' if row in letters else ""
            seeds = "—" if n is None else (f'{n} <span class="badge">1 seed</span>' if n == 1 else str(n))
            body.append(f'<tr data-row="{html.escape(row)}"><td class="l">{tag}{html.escape(row)}</td>'
                        f'<td data-row="{html.escape(row)}" data-col="seeds" data-value="{"" if n is None else n}">{seeds}</td>'
                        + "".join(cell_html(row, c, comp["cells"][row].get(c), markers.get(row, {}).get(c, "")) for c in cols)
                        + "</tr>")
        out.append(f'<table class="config" data-group="{html.escape(caption)}"><caption>{html.escape(caption)}</caption>'
                   f'<thead><tr><th class="l">configuration</th><th>seeds</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')
    return '<div class="tables">' + "".join(out) + "</div>"


def embedded_plots(paths: Sequence[str | Path]) -> str:
    """compare.py's PNG plots as inline images (data URIs), each captioned with its file name."""
    figs = []
    for p in map(Path, paths):
        if p.is_file():
            data = base64.b64encode(p.read_bytes()).decode("ascii")
            figs.append(f'<figure><img alt="{html.escape(p.stem)}" src="data:image/png;base64,{data}">'
                        f'<figcaption>{html.escape(p.name)}</figcaption></figure>')
    return '<div class="plots">' + "".join(figs) + "</div>" if figs else "<p>No plots (compare.py plots=false).</p>"


def source_folders(comp: Mapping[str, Any]) -> dict[tuple[str, str], list[tuple[Path, dict]]]:
    """``(row, benchmark) -> [(folder, result)]``: the evaluation folders behind each row's cells
    (several for pooled seeds), from comparison.json's ``sources``."""
    found: dict[tuple[str, str], dict[str, tuple[Path, dict]]] = {}
    cache: dict[str, dict] = {}
    for key, paths in (comp.get("sources") or {}).items():
        row = key.split(" | ", 1)[0]
        for p in [paths] if isinstance(paths, str) else paths:
            if p not in cache:
                cache[p] = load_published_json(p) if Path(p).is_file() else {}
            res = cache[p]
            if res.get("kind") in ("retrieval", "mcq", "qa") and (Path(p).parent / "samples.jsonl").is_file():
                found.setdefault((row, benchmark_label(res)), {})[p] = (Path(p).parent, res)
    return {k: list(v.values()) for k, v in found.items()}


def _system_entry(rows: list[dict], kind: str, ks: Sequence[int]) -> dict[str, Any]:
    """One configuration's answer to one item over its seeds: hits per k (one per seed) and the
    first seed's top tools (a probe: its answer)."""
    if kind == "retrieval":
        keys = {k: METRICS.get("hit").item_key("c", k) for k in ks}
        return {"hits": {str(k): [int((r.get("metrics") or {}).get(keys[k], 0)) for r in rows] for k in ks},
                "top": [b.get("tool") for b in (rows[0].get("constrained") or [])[:MAX_BEAMS]]}
    return {"hits": {str(k): [int(bool(r.get("correct"))) for r in rows] for k in ks}, "top": [rows[0].get("pred")]}


def _run_name(folder: Path, res: Mapping[str, Any]) -> str:
    """The run folder an evaluation belongs to (the nearest ancestor with a config.yaml), or
    ``baseline``: how a seed is named beside its configuration's label, with its sweep's folder
    (``grid/0_tg-lora``: two sweeps number their runs alike)."""
    if "baseline" in (res.get("source") or {}):
        return "baseline"
    return next((f"{p.parent.name}/{p.name}" for p in Path(folder).parents if (p / "config.yaml").is_file()), Path(folder).name)


def probe_mode(res: Mapping[str, Any]) -> str:
    """A probe evaluation's mode (token / control / card / options; results.json ``mode``, else its ``system``, which
    names the mode), "" for a retrieval one: the runs of one configuration in one mode are its seeds; the modes of one
    run are not."""
    return "" if res.get("kind") == "retrieval" else str(res.get("mode") or res.get("system") or "")


def query_records(sources: Mapping[tuple[str, str], list[tuple[Path, dict]]], ks: Sequence[int]) -> list[dict[str, Any]]:
    """The items of every benchmark — a probe's once per mode — each with every configuration's entry
    (:func:`_system_entry`: one hit per run in that mode); ``sources``: :func:`source_folders`."""
    items: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (row, bench), evals in sources.items():
        by_mode: dict[str, list[tuple[Path, dict]]] = {}
        for folder, res in evals:
            by_mode.setdefault(probe_mode(res), []).append((folder, res))
        for mode, runs_of_mode in by_mode.items():
            per_item: dict[str, list[dict]] = {}
            for folder, _ in runs_of_mode:
                for r in JsonlStore(folder / "samples.jsonl", key="item_id", repair=False).by_key.values():
                    per_item.setdefault(str(r.get("item_id")), []).append(r)
            kind = runs_of_mode[0][1]["kind"]
            runs = ", ".join(dict.fromkeys(_run_name(folder, res) for folder, res in runs_of_mode))
            for ident, rows in per_item.items():
                first = rows[0]
                rec = items.setdefault((bench, ident, mode), {
                    "bench": bench, "id": ident, "kind": kind, "mode": mode,
                    "tier": first.get("tier", kind if kind != "retrieval" else "—"),
                    "query": str(first.get("query", first.get("question", ""))), "tool": first.get("tool"),
                    "gold": first.get("gold") if isinstance(first.get("gold"), str) else list(first.get("gold") or []), "sys": {}})
                rec["sys"][row] = {**_system_entry(rows, kind, ks), "seeds": len(rows), "run": runs}
    return list(items.values())


def _select(ident: str, label: str, values: Sequence[str], blank: str | None = "all", chosen: str | None = None) -> str:
    opts = ([f'<option value="">{blank}</option>'] if blank is not None else []) + [
        f'<option value="{html.escape(v)}"{" selected" if v == chosen else ""}>{html.escape(v)}</option>' for v in values]
    return f'<label>{label} <select id="{ident}">{"".join(opts)}</select></label>'


def side_by_side(comp: Mapping[str, Any]) -> str:
    """The per-query view's filters, its container and its data (a JSON block); k runs over the
    cut-offs the evaluations scored."""
    sources = source_folders(comp)
    ks = ks_of([res for evals in sources.values() for _, res in evals]) or [1]
    records = query_records(sources, ks)
    rows = [r for r in comp["rows"] if any(r in rec["sys"] for rec in records)]
    data = json.dumps({"items": records, "systems": rows, "max": MAX_ITEMS}, ensure_ascii=False).replace("</", "<\\/")
    filters = ('<label>search <input id="f-q" type="search" placeholder="query, tool or id"></label>'
               + _select("f-bench", "benchmark", list(dict.fromkeys(r["bench"] for r in records)))
               + _select("f-tier", "tier", sorted({str(r["tier"]) for r in records}))
               + _select("f-mode", "probe mode", sorted({r["mode"] for r in records if r["mode"]}))
               + _select("f-a", "A", rows, blank=None, chosen=rows[0] if rows else None)
               + _select("f-b", "B", rows, blank=None, chosen=rows[1] if len(rows) > 1 else None)
               + _select("f-outcome", "outcome", ["A right, B wrong", "A wrong, B right", "both right", "both wrong"])
               + _select("f-k", "at k", [str(k) for k in ks], blank=None)
               + f'<span><b id="shown">{len(records)}</b> of {len(records)} items</span>')
    return (f'<div id="filters">{filters}</div><p class="meta">Right at k: every seed of the configuration has a gold tool '
            f'in its top k (a probe: answers correctly); wrong: no seed does. A probe item has a card per mode, each counting '
            f'the runs evaluated in that mode. Lists show the first seed\'s top {MAX_BEAMS}; '
            f'gold tools are green.</p><div id="queries"></div>'
            f'<script type="application/json" id="query-data">{data}</script>')


def render_comparison(comp: Mapping[str, Any], notes: Mapping[str, Any], plots: Sequence[str | Path], title: str, meta: str) -> str:
    """The whole comparison page (see the module docstring)."""
    legend = html.escape(notes.get("legend", "").strip())
    effect = html.escape(notes.get("cohens_d", "").strip())
    one = ('<p class="meta"><span class="badge">1 seed</span> a configuration trained once: one run, not a replicated '
           "configuration (no between-seed spread; its interval resamples queries only).</p>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1><div class="meta">{html.escape(meta)}</div>'
            f'<h2>Configurations (seeds pooled; 95% intervals)</h2>{config_tables(comp, notes)}'
            f'<p class="legend" id="legend">{legend}</p><p class="legend" id="cohens-d">{effect}</p>{one}'
            f'<h2>Plots</h2>{embedded_plots(plots)}<h2>Per query, side by side</h2>{side_by_side(comp)}'
            f'<script>{COMPARE_JS}</script></body></html>')


def write_comparison_report(comp: Mapping[str, Any], out: str | Path, notes: Mapping[str, Any] | None = None,
                            plots: Sequence[str | Path] = (), title: str = "toolsense comparison", meta: str = "") -> Path:
    """Write the comparison page to ``out``; ``notes``: ``letters`` (row -> letter), ``markers``
    (row -> column -> superscript text), ``legend`` and ``cohens_d`` (text), from compare.py."""
    return atomic_write_text(Path(out), render_comparison(comp, notes or {}, plots, title, meta))
