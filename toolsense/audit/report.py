"""Findings, Markdown report and PNG plots - rendered from ``results.json`` alone."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

NUMBERS = ("auroc", "lo", "hi", "gap", "mean", "sd")
"""The keys whose null in results.json is an undefined number (an AUROC of one class), read back as NaN."""


def numbers(obj):
    """``obj`` (results.json's data) with a null under :data:`NUMBERS` as NaN, so the tables print
    "n/a" and the plots leave a gap where an AUROC is undefined."""
    if isinstance(obj, dict):
        return {k: float("nan") if v is None and k in NUMBERS else numbers(v) for k, v in obj.items()}
    return [numbers(v) for v in obj] if isinstance(obj, list) else obj


def findings(res: dict) -> list[str]:
    """Plain-language statements a reader checks first, each with its numbers."""
    out, res = [], numbers(res)
    pt = res.get("pt2d")
    if pt:
        for feats in sorted({r["features"] for r in pt["rows"]}):
            rows = [r for r in pt["rows"] if r["features"] == feats]
            full = next(r for r in rows if r["view"] == "full")
            best = max((r for r in rows if r["view"] != "full"), key=lambda r: np.nan_to_num(r["auroc"]["all"]["auroc"], nan=-1.0))
            a, f = best["auroc"]["all"], full["auroc"]["all"]
            out.append(f"PT2D [{feats}]: full trace AUROC {_f(f['auroc'], '.3f')} [{_f(f['lo'], '.3f')}, {_f(f['hi'], '.3f')}]; "
                       f"top tool {best['view']} {_f(a['auroc'], '.3f')} [{_f(a['lo'], '.3f')}, {_f(a['hi'], '.3f')}] "
                       f"(gap A_tool - A_full = {_f(best['gap'], '+.3f')}); evidence: "
                       + ", ".join(repr(g[0]) for g in best["top_ngrams"]["label_1"][:3]))
    dil = res.get("dilution")
    if dil:
        real = [r["auroc"] for r in dil["real"]]
        syn = [r["mean"] for r in dil["synthetic"]]
        out.append(f"Dilution (real, real_order={dil['real_order']['setting']}: {' -> '.join(dil['order'])}): AUROC "
                   + " -> ".join(_f(a, ".3f") for a in real) + f"; monotone non-increasing: {_monotone(real)}")
        sds = [r["sd"] for r in dil["synthetic"]]
        pool, length = dil["synthetic_pool"], dil["length_match"]
        out.append(f"Dilution (synthetic, {dil['tool']} + K sections from pool {pool['tools']} "
                   f"[{pool['setting']}; excluded: {pool['excluded'] or 'none'}], length-matched in characters to "
                   f"{length['setting']} (mean {_f(length['mean_target_chars'], '.1f')} chars)): " + ", ".join(
            f"K={r['k']}: {_f(r['mean'], '.3f')}+-{_f(r['sd'], '.3f')}" for r in dil["synthetic"])
            + f"; monotone non-increasing within one sd: {_monotone(syn, sds)}")
    red = res.get("redaction")
    if red:
        o = red["variants"]["original"]["auroc"]["all"]
        out.append(f"Redaction: original AUROC {_f(o['auroc'], '.3f')} [{_f(o['lo'], '.3f')}, {_f(o['hi'], '.3f')}] "
                   + (f"(scored by answer probabilities, no parsing; {red['n_scored']} records)"
                      if red.get("decoding", {}).get("method") == "answer_probs" else
                      f"({red['variants']['original']['unparseable']} unparseable of {red['n_scored']})"))
        for v, row in red["variants"].items():
            if v == "original":
                continue
            a, d = row["auroc"]["all"], row["delta_A"]
            unscored = [name for name, r in (("original", red["variants"]["original"]), (v, row))
                        if r.get("unparseable", 0) >= red["n_scored"]]
            if unscored:  # every score is unparseable_score: the AUROCs compare a constant with a constant
                verdict = f"no verdict: no answer of {' or '.join(unscored)} could be read as a score"
            elif d["lo"] != d["lo"]:
                verdict = f"undefined ({d.get('undefined', 'one class')})"
            elif not row["control"]:
                verdict = "depends on it" if d["lo"] > 0 else "no significant change"
            else:
                verdict = "control intact" if d["lo"] <= 0 <= d["hi"] or abs(d["auroc"]) < 0.05 else "CONTROL MOVED"
            out.append(f"  redact {v}{' (control)' if row['control'] else ''}: AUROC {_f(a['auroc'], '.3f')} "
                       f"[{_f(a['lo'], '.3f')}, {_f(a['hi'], '.3f')}], dA = A_orig - A_redacted = {_f(d['auroc'], '+.3f')} "
                       f"[{_f(d['lo'], '+.3f')}, {_f(d['hi'], '+.3f')}], "
                       f"{row['replacements']['replacements']} replacements -> {verdict}")
    return out


def _f(x: float | None, spec: str) -> str:
    """A number as text; an undefined one (NaN, null in results.json: one class) as "n/a"."""
    return "n/a" if x is None or x != x else format(x, spec)


def _monotone(xs: list[float], sds: list[float] | None = None, tol: float = 0.02) -> bool:
    """Non-increasing up to ``tol`` (or, for seed means, up to the later point's sd)."""
    sds = sds or [0.0] * len(xs)
    return all(b <= a + max(tol, sd) for a, b, sd in zip(xs, xs[1:], sds[1:]))


def plot_all(res: dict, out_dir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    if res.get("pt2d"):
        rows = res["pt2d"]["rows"]
        views = list(dict.fromkeys(r["view"] for r in rows))
        feats = list(dict.fromkeys(r["features"] for r in rows))
        fig, ax = plt.subplots(figsize=(1.2 * len(views) + 2, 3.5))
        w = 0.8 / len(feats)
        for j, f in enumerate(feats):
            pts = [next(r for r in rows if r["view"] == v and r["features"] == f)["auroc"]["all"] for v in views]
            x = np.arange(len(views)) + j * w
            ax.bar(x, [p["auroc"] for p in pts], w, label=f,
                   yerr=[[p["auroc"] - p["lo"] for p in pts], [p["hi"] - p["auroc"] for p in pts]], capsize=2)
        ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set_xticks(np.arange(len(views)) + 0.4 - w / 2, views, rotation=20)
        ax.set_ylabel("eval AUROC")
        ax.set_title("PT2D: full trace vs each tool")
        ax.legend(fontsize=7)
        files.append(_save(fig, out_dir / "pt2d.png"))
    if res.get("dilution"):
        dil = res["dilution"]
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
        real = dil["real"]
        axes[0].errorbar([r["k"] for r in real], [r["auroc"] for r in real],
                         yerr=[[r["auroc"] - r["lo"] for r in real], [r["hi"] - r["auroc"] for r in real]], marker="o", capsize=3)
        axes[0].set_xlabel("tools concatenated (" + ", ".join(dil["order"]) + ")", fontsize=7)
        axes[0].set_title("real dilution")
        syn = dil["synthetic"]
        axes[1].errorbar([r["k"] for r in syn], [r["mean"] for r in syn], yerr=[r["sd"] for r in syn], marker="o", capsize=3)
        axes[1].set_xlabel(f"K inserted sections ({dil['tool']})")
        axes[1].set_title("synthetic dilution (mean +- sd over seeds)")
        for ax in axes:
            ax.axhline(0.5, color="grey", lw=0.8, ls="--")
            ax.set_ylabel("eval AUROC")
        files.append(_save(fig, out_dir / "dilution.png"))
    if res.get("redaction"):
        var = res["redaction"]["variants"]
        names = list(var)
        pts = [var[v]["auroc"]["all"] for v in names]
        fig, ax = plt.subplots(figsize=(1.3 * len(names) + 2, 3.5))
        colors = ["tab:blue" if v == "original" else ("tab:green" if var[v]["control"] else "tab:red") for v in names]
        ax.bar(names, [p["auroc"] for p in pts], color=colors,
               yerr=[[p["auroc"] - p["lo"] for p in pts], [p["hi"] - p["auroc"] for p in pts]], capsize=3)
        ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set_ylabel("eval AUROC")
        ax.set_title("token-class redaction (green: control)")
        files.append(_save(fig, out_dir / "redaction.png"))
    return files


def _save(fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path.name


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _ci(a: dict) -> str:
    return "n/a" if a["auroc"] != a["auroc"] else f"{a['auroc']:.3f} [{a['lo']:.3f}, {a['hi']:.3f}]"


def _delta(d: dict) -> str:
    return "n/a" if d["auroc"] != d["auroc"] else f"{d['auroc']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]"


def report_files(res: dict) -> dict[str, str | bytes]:
    """``report.md`` and the plots it links (file name -> content), for the run to publish with
    results.json as one set (utils/publish.py); the plots are drawn in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="audit-plots.") as tmp:
        md = report_text(res, Path(tmp))
        return {"report.md": md, **{p.name: p.read_bytes() for p in sorted(Path(tmp).glob("*.png"))}}


def report_text(res: dict, out_dir: Path) -> str:
    """``report.md`` with findings, tables and the plots (drawn into ``out_dir``), from the results dict."""
    res = numbers(res)
    plot_all(res, out_dir)  # the images the sections below link by name
    md = ["# Tool-trace audit", "", f"Data: `{res['data']['path']}` ({res['data']['n_records']} records, "
          f"fit partitions {res['data']['fit']}, eval {res['data']['eval']}; sha256 {res['data']['sha256'][:12]})", "",
          "## Findings", ""] + [f"- {f.strip()}" for f in res["findings"]] + [""]
    if res.get("pt2d"):
        rows = res["pt2d"]["rows"]
        parts = [k for k in rows[0]["auroc"] if k != "all"]
        md += ["## Stage 1 - PT2D", "", _table(["view", "features", "AUROC (eval)", "gap", "empty"] + [f"c{p}" for p in parts],
               [[r["view"], r["features"], _ci(r["auroc"]["all"]), _f(r['gap'], "+.3f"), f"{r['empty_fraction']:.2f}"]
                + [_f(r['auroc'][p]['auroc'], ".3f") for p in parts] for r in rows]), "", "![pt2d](pt2d.png)", "",
               "### Top-weighted n-grams", ""]
        for r in rows:
            md.append(f"- **{r['view']} / {r['features']}** - label 1: "
                      + ", ".join(f"`{g}` ({w:+.2f})" for g, w in r["top_ngrams"]["label_1"][:6])
                      + "; label 0: " + ", ".join(f"`{g}` ({w:+.2f})" for g, w in r["top_ngrams"]["label_0"][:6]))
        md.append("")
    if res.get("dilution"):
        d = res["dilution"]
        pool, length = d["synthetic_pool"], d["length_match"]
        md += ["## Dilution sweeps", "", f"Features: {d['features']}. Probe tool: `{d['tool']}`.", "",
               f"- Real append order (`dilution.real_order={d['real_order']['setting']}`: {d['real_order']['rule']}): "
               + " -> ".join(d["order"]),
               f"- Synthetic pool (`dilution.synthetic_pool={pool['setting']}`: {pool['rule']}): {pool['tools']}; excluded: "
               + (", ".join(f"{t} ({why})" for t, why in pool["excluded"].items()) or "none"),
               f"- Length matching (`dilution.length_match={length['setting']}`, in {length['unit']}): {length['rule']}; "
               f"mean target {length['mean_target_chars']:.1f} characters (the paper's sections: 1,845.9)", "",
               _table(["k", "tools", "AUROC"], [[r["k"], ", ".join(r["tools"]), _ci(r)] for r in d["real"]]), "",
               _table(["K", f"mean AUROC ({d['tool']})", "sd", "per seed"],
                      [[r["k"], _f(r['mean'], ".3f"), _f(r['sd'], ".3f"), r["per_seed"]] for r in d["synthetic"]]), "",
               "![dilution](dilution.png)", ""]
    if res.get("redaction"):
        red = res["redaction"]
        parts = [k for k in red["variants"]["original"]["auroc"] if k != "all"]
        rows = []
        for v, r in red["variants"].items():
            delta = r.get("delta_A")
            rows.append([v + (" (control)" if r["control"] else ""), r.get("scope", ""), _ci(r["auroc"]["all"]),
                         "" if delta is None else _delta(delta),
                         r.get("replacements", {}).get("replacements", ""), r["unparseable"]]
                        + [_f(r['auroc'][p]['auroc'], ".3f") for p in parts])
        md += ["## Stage 2 - token-class redaction", "",
               f"Scorer: `{json.dumps(red['scorer'])}`, decoding `{json.dumps(red.get('decoding'))}`; "
               f"{red['n_scored']} eval records per variant.", "",
               _table(["variant", "scope", "AUROC", "ΔA = A_orig − A_redacted", "replacements", "unparseable"]
                      + [f"c{p}" for p in parts], rows), "",
               "Scope `fields`: the class is redacted in the record's prompt-bearing fields; `rendered`: in the "
               "rendered prompt as the model reads it (template text and section headers included - the format class).", "",
               "ΔA = A_original − A_redacted, the paper's sign: positive means the scorer depends on the class. "
               "Per cluster (paired bootstrap CI):", "",
               _table(["variant"] + [f"c{p}" for p in parts],
                      [[v] + [_delta(r["delta_A_by_partition"][p]) for p in parts]
                       for v, r in red["variants"].items() if v != "original"]), "",
               "![redaction](redaction.png)", ""]
    return "\n".join(md)
