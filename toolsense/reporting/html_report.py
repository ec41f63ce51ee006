"""``report.html``: one static page per evaluation (or comparison) that people open in a browser —
the metrics table with intervals, inline SVG plots, and a per-sample browser (query, gold tools,
constrained and free-form beams with their scores, non-tool outputs marked; probe answers with
the option order shown), searchable and filterable by benchmark, tier and hit/miss.

Everything is inside the file: CSS, script, plots (SVG) and the samples (a JSON block); nothing
is fetched, so it reads offline and from an archive. Built from the per-evaluation
``results.json`` / ``samples.jsonl`` files under a folder, never from a tracker. The filters'
state lives in the URL fragment (``report.html#bench=realistic&outcome=miss&k=1``): a view can be
linked, and the browser test (tests/reporting/test_html_report.py) drives it that way.
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from toolsense.data.prompts import probe_answers
from toolsense.metrics.registry import METRICS, MODES
from toolsense.reporting.html_assets import CSS, JS
from toolsense.reporting.tables import benchmark_label, flag_text
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.paths import atomic_write_text
from toolsense.utils.publish import load_published_json

MAX_BEAMS = 10
"""Beams per decoding mode shown for each sample (the full lists stay in samples.jsonl)."""


def collect_evaluations(root: str | Path) -> list[tuple[Path, dict[str, Any]]]:
    """``(folder, result)`` of every per-evaluation results.json under ``root`` (combined
    summaries, which hold a ``results`` list, and comparison tables are skipped)."""
    out = []
    for path in sorted(Path(root).rglob("results.json")):
        res = load_published_json(path)  # only what its folder's manifest published (utils/publish.py)
        if isinstance(res, dict) and {"kind", "metrics", "benchmark", "system"} <= set(res):
            out.append((path.parent, res))
    return out


def ks_of(results: Sequence[dict]) -> list[int]:
    """The cut-offs of the registered metrics the results hold."""
    return METRICS.ks_of(key for r in results for key in r.get("metrics", {}))


def _cell(est: dict | None, key: str, pct: bool = True) -> str:
    if not est or est.get("value") is None:
        return f'<td data-metric="{key}">—</td>'
    s, d = (100.0, 1) if pct else (1.0, 2)
    ci = f' <span class="ci">[{est["lo"] * s:.{d}f}, {est["hi"] * s:.{d}f}]</span>' if est.get("lo") is not None else ""
    return f'<td data-metric="{key}" data-value="{est["value"]!r}">{est["value"] * s:.{d}f}{ci}</td>'


def _row_head(folder: str, r: dict) -> str:
    return (f'<tr data-folder="{html.escape(folder)}" data-bench="{html.escape(benchmark_label(r))}" '
            f'data-system="{html.escape(str(r["system"]))}"><td class="l">{html.escape(folder)}</td>'
            f'<td class="l">{html.escape(benchmark_label(r))}</td><td class="l">{html.escape(str(r["system"]))}</td>'
            f'<td data-metric="n" data-value="{r.get("n", "")}">{r.get("n", "—")}</td>')


def metrics_tables(rows: Sequence[tuple[str, dict]]) -> str:
    """Two tables over ``(folder, result)`` rows: retrieval (the registry's table columns, as in
    table.md: Rc@k, Rf@k in percent, IS@k as a ratio, COMP@k, R-precision) and probes (accuracy,
    chance, majority rate in percent, the flagged top answer). Each number's cell carries
    ``data-metric`` (the results.json key) and its exact ``data-value``; a row names its folder
    (relative to the report), benchmark and system."""
    ks = ks_of([r for _, r in rows])
    cols = METRICS.table_columns(ks)
    head = '<th class="l">evaluation</th><th class="l">benchmark</th><th class="l">system</th><th>n</th>'
    ret = [_row_head(f, r) + "".join(_cell(METRICS.find(r["metrics"], key), key, pct=m.scale == "percent")
                                     for _, key, m in cols) + "</tr>" for f, r in rows if r["kind"] == "retrieval"]
    probe = []
    for f, r in rows:
        if r["kind"] == "retrieval":
            continue
        top = r.get("top_answer") or {}
        probe.append(_row_head(f, r) + _cell(r["metrics"].get("accuracy"), "accuracy") + _cell({"value": r.get("chance")}, "chance")
                     + _cell({"value": r.get("majority_rate")}, "majority_rate")
                     + f'<td class="l">{html.escape(str(top.get("answer", "—")))} '
                       f'<span class="flag">{html.escape(flag_text(top))}</span></td></tr>')
    out = ""
    if ret:
        heads = "".join(f"<th>{html.escape(h)}</th>" for h, _, _ in cols)
        out += (f'<table id="retrieval"><thead><tr>{head}{heads}</tr></thead>'
                f'<tbody>{"".join(ret)}</tbody></table>')
    if probe:
        out += (f'<table id="probes"><thead><tr>{head}<th>accuracy %</th><th>chance %</th><th>majority %</th>'
                f'<th class="l">top answer</th></tr></thead><tbody>{"".join(probe)}</tbody></table>')
    return out


CHAR_PX = 6
"""Width of one character of a 10 px SVG label, about (for the label layout only)."""

COLOURS = ["#2563eb", "#f59e0b", "#15803d", "#9333ea", "#dc2626", "#0891b2"]


def svg_bars(title: str, groups: Sequence[str], series: dict[str, Sequence[dict | None]],
             ref: float | Sequence[float | None] | None = None) -> str:
    """A grouped bar chart as inline SVG: one group per label in ``groups``, one bar per series
    (values in [0, 1] with their 95% interval as a whisker), an optional dashed reference (chance):
    one line across, or one per group (an MCQ's 25% and a QA's 50% in one chart). Missing
    estimates leave a gap. Group labels are drawn whole (slanted when wider than their group): two
    configurations whose names end alike stay told apart."""
    n_s = max(len(series), 1)
    w_bar, gap, h, top, left = max(16, 64 // n_s), 18, 170, 24, 34
    slot = n_s * w_bar + gap
    longest = max((len(g) for g in groups), default=0) * CHAR_PX
    tilt = longest > slot  # a label wider than its group is drawn slanted (30°), never cut
    low, wide = (int(longest * 0.5) + 8, int(longest * 0.87)) if tilt else (0, 0)
    right = left + len(groups) * slot + 10
    y = lambda v: top + h * (1 - max(0.0, min(1.0, v)))  # noqa: E731
    parts = [f'<text x="{left}" y="14" font-size="12" font-weight="600">{html.escape(title)}</text>']
    for t in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e5e7eb"/>'
                     f'<text x="{left - 4}" y="{y(t) + 4:.1f}" font-size="10" text-anchor="end">{int(t * 100)}</text>')
    for gi, g in enumerate(groups):
        x0 = left + gap / 2 + gi * (n_s * w_bar + gap)
        for si, (name, vals) in enumerate(series.items()):
            est = vals[gi]
            if not est or est.get("value") is None:
                continue
            x, v = x0 + si * w_bar, est["value"]
            parts.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{w_bar - 2}" height="{top + h - y(v):.1f}" '
                         f'fill="{COLOURS[si % len(COLOURS)]}"><title>{html.escape(name)} {html.escape(g)}: {v:.3f}</title></rect>')
            if est.get("lo") is not None:
                cx = x + (w_bar - 2) / 2
                parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(est["lo"]):.1f}" y2="{y(est["hi"]):.1f}" '
                             'stroke="#111" stroke-width="1.2"/>')
        cx, cy = x0 + n_s * w_bar / 2, top + h + 14
        turn = f' transform="rotate(30 {cx:.1f} {cy})"' if tilt else ""
        parts.append(f'<text class="group" x="{cx:.1f}" y="{cy}" font-size="10" text-anchor="{"start" if tilt else "middle"}"'
                     f'{turn}>{html.escape(g)}</text>')
        r = ref[gi] if isinstance(ref, (list, tuple)) else None
        if r is not None:
            parts.append(f'<line class="chance" data-chance="{r!r}" x1="{x0 - 4:.1f}" x2="{x0 + n_s * w_bar + 2:.1f}" y1="{y(r):.1f}" '
                         f'y2="{y(r):.1f}" stroke="#b91c1c" stroke-dasharray="4 3"/>')
    if ref is not None and not isinstance(ref, (list, tuple)):
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y(ref):.1f}" y2="{y(ref):.1f}" stroke="#b91c1c" stroke-dasharray="4 3"/>')
    legend = "".join(f'<rect x="{left + i * 90}" y="{top + h + low + 22}" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>'
                     f'<text x="{left + i * 90 + 14}" y="{top + h + low + 31}" font-size="10">{html.escape(s)}</text>'
                     for i, s in enumerate(series))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{right + wide}" height="{top + h + low + 40}" role="img">'
            + "".join(parts) + legend + "</svg>")


def plots(results: Sequence[dict], labels: Sequence[str] | None = None) -> str:
    """Per retrieval benchmark: Rc@k and Rf@k of each system at the smallest and largest k;
    probes: accuracy per benchmark × mode with chance dashed. ``labels`` name the results' bars
    (:func:`evaluation_labels`; default: their systems)."""
    figs, hit = [], METRICS.get("hit")
    ks = ks_of(results)
    show = sorted({ks[0], ks[-1]}) if ks else []
    named = list(zip(labels or [str(r["system"]) for r in results], results))
    for bench in dict.fromkeys(benchmark_label(r) for r in results if r["kind"] == "retrieval"):
        rows = [(lab, r) for lab, r in named if r["kind"] == "retrieval" and benchmark_label(r) == bench]
        keys = [hit.result_key(mode, k) for k in show for mode in MODES]
        series = {key: [METRICS.find(r["metrics"], key) for _, r in rows] for key in keys}
        figs.append(svg_bars(f"{bench}: recall (%)", [lab for lab, _ in rows], series))
    probes = [(lab, r) for lab, r in named if r["kind"] != "retrieval"]
    if probes:  # chance per probe: 1 / answers (25% MCQ, 50% QA) unless results.json states it
        chance = [r.get("chance", 0.25 if r["kind"] == "mcq" else 0.5) for _, r in probes]
        figs.append(svg_bars("probe accuracy (%), chance dashed", [f"{benchmark_label(r)}/{lab}" for lab, r in probes],
                             {"accuracy": [r["metrics"].get("accuracy") for _, r in probes]}, chance))
    return '<div class="plots">' + "".join(f"<figure>{f}</figure>" for f in figs) + "</div>"


def _run_of(folder: Path, root: Path) -> str | None:
    """The run an evaluation folder belongs to: the nearest folder from ``folder`` up to ``root``
    holding a config.yaml (a training run), relative to ``root``; None when there is none."""
    for p in (folder, *folder.parents):
        if p != root and root not in p.parents:
            return None
        if (p / "config.yaml").is_file():
            return p.relative_to(root).as_posix() if p != root else p.name
    return None


def evaluation_labels(evaluations: Sequence[tuple[Path, dict[str, Any]]], root: Path) -> list[str]:
    """How the plots and the sample cards name each evaluation: its system, prefixed by its run
    (:func:`_run_of`) when the page spans several runs (a study's page: every run's model is
    ``smollm2_135m:stage2``); where two evaluations of one benchmark still share a name, their
    folders relative to ``root``."""
    runs = [_run_of(folder, root) for folder, _ in evaluations]
    several = len(set(runs)) > 1
    labels = [f"{run} · {r['system']}" if several and run else str(r["system"]) for run, (_, r) in zip(runs, evaluations)]
    seen = Counter((benchmark_label(r), lab) for lab, (_, r) in zip(labels, evaluations))
    return [lab if seen[(benchmark_label(r), lab)] == 1 or folder == root else folder.relative_to(root).as_posix()
            for lab, (folder, r) in zip(labels, evaluations)]


def _beams(beams: list[dict] | None) -> list[dict] | None:
    if beams is None:
        return None
    return [{"tool": b.get("tool"), "score": round(float(b.get("score", 0.0)), 3),
             **({"text": b["text"]} if b.get("tool") is None and "text" in b else {})}
            for b in beams[:MAX_BEAMS]]


def sample_records(folder: Path, res: dict[str, Any], ks: Sequence[int]) -> list[dict[str, Any]]:
    """The rows of ``folder/samples.jsonl`` as the page's script reads them (beams cut to
    :data:`MAX_BEAMS`; ``text`` the lower-cased searchable text)."""
    path = folder / "samples.jsonl"
    if not path.is_file():
        return []
    base = {"bench": benchmark_label(res), "system": str(res["system"]), "kind": res["kind"]}
    out = []
    for r in JsonlStore(path, key="item_id", repair=False).by_key.values():
        # rows of older or hand-written results may lack fields: shown as empty, never an error
        ident, gold = str(r.get("item_id")), r.get("gold", [])
        if res["kind"] == "retrieval":
            query, m = str(r.get("query", "")), r.get("metrics", {})
            rec = {**base, "id": ident, "tier": r.get("tier", "—"), "query": query, "gold": list(gold),
                   "constrained": _beams(r.get("constrained") or []), "free": _beams(r.get("free")),
                   "hits": {str(k): int(m.get(METRICS.get("hit").item_key("c", k), 0)) for k in ks},
                   "free_hits": {str(k): None if (v := m.get(METRICS.get("hit").item_key("f", k))) is None else int(v) for k in ks}}
            rec["text"] = " ".join([query, ident, *map(str, gold)]).lower()
        else:
            options = r.get("options_shown") or []
            letters = probe_answers(res["kind"], len(options)) if options else []
            rec = {**base, "id": ident, "tier": res["kind"], "query": str(r.get("question", "")), "tool": str(r.get("tool", "")),
                   "options": options, "letters": list(letters), "gold": gold, "pred": r.get("pred"),
                   "order": r.get("permutation"), "correct": bool(r.get("correct"))}
            rec["text"] = " ".join([rec["query"], ident, rec["tool"]]).lower()
        out.append(rec)
    return out


def _select(ident: str, label: str, values: Sequence[str], blank: str | None = "all") -> str:
    opts = ([f'<option value="">{blank}</option>'] if blank is not None else []) + \
        [f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values]
    return f'<label>{label} <select id="{ident}">{"".join(opts)}</select></label>'


def render(evaluations: Sequence[tuple[Path, dict[str, Any]]], title: str, meta: str = "") -> str:
    """The whole page for ``evaluations`` (``(folder, result)`` pairs, see :func:`collect_evaluations`)."""
    results = [r for _, r in evaluations]
    root = Path(os.path.commonpath([str(f) for f, _ in evaluations])) if evaluations else Path(".")
    rows = [((f.relative_to(root).as_posix() if f != root else f.name), r) for f, r in evaluations]
    ks = ks_of(results) or [1]
    labels = evaluation_labels(evaluations, root)
    records = [{**rec, "label": lab} for lab, (folder, res) in zip(labels, evaluations) for rec in sample_records(folder, res, ks)]
    data = json.dumps(records, ensure_ascii=False).replace("</", "<\\/")
    filters = ('<label>search <input id="f-q" type="search" placeholder="query, tool or id"></label>'
               + _select("f-bench", "benchmark", list(dict.fromkeys(r["bench"] for r in records)))
               + _select("f-tier", "tier", sorted({r["tier"] for r in records}))
               + _select("f-outcome", "outcome", ["hit", "miss"])
               + _select("f-k", "hit at k (constrained)", [str(k) for k in ks], blank=None)
               + f'<span><b id="shown">{len(records)}</b> of {len(records)} samples</span>')
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1><div class="meta">{html.escape(meta)}</div>'
            f'<h2>Metrics (95% intervals)</h2><div class="wide">{metrics_tables(rows)}</div><h2>Plots</h2>{plots(results, labels)}'
            f'<h2>Samples</h2><div id="filters">{filters}</div><div id="samples"></div>'
            f'<script type="application/json" id="samples-data">{data}</script><script>{JS}</script></body></html>')


def write_html_report(root: str | Path | Sequence[str | Path], out: str | Path | None = None, title: str | None = None) -> Path | None:
    """Write ``report.html`` (default ``<root>/report.html``) for every evaluation under
    ``root`` (a folder, or several: a comparison's roots); returns its path, or None when no
    per-evaluation results are there."""
    roots = [Path(root)] if isinstance(root, (str, Path)) else [Path(r) for r in root]
    text = html_report_text(roots, title)
    if text is None:
        return None
    path = Path(out) if out is not None else roots[0] / "report.html"
    atomic_write_text(path, text)
    return path


def html_report_text(roots: Sequence[Path], title: str | None = None) -> str | None:
    """The page :func:`write_html_report` writes for the evaluations under ``roots``; None when there are none."""
    evaluations = [e for r in roots for e in collect_evaluations(r)]
    if not evaluations:
        return None
    root = roots[0]
    shas = sorted({str(r.get("git_sha"))[:10] for _, r in evaluations if r.get("git_sha")})
    meta = f"{len(evaluations)} evaluations under {', '.join(r.name or str(r) for r in roots)}; git {', '.join(shas) or 'unknown'}"
    return render(evaluations, title or f"toolsense report: {root.name}", meta)
