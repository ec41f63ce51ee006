"""A study finding's sensitivity table as Markdown: a row per (k, scale), the pooled estimate with its
verdict, then each configuration's (the table's shape: study/findings/tables.py)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from toolsense.reporting.tables import markdown_table, pct, seeds_text


def _fmt(est: dict[str, Any] | None, scale: str) -> str:
    if not est or est.get("value") is None:
        return pct(est, True)
    if scale.startswith("drift"):  # a ratio (flat / hierarchical)
        ci = f" [{est['lo']:.2f}, {est['hi']:.2f}]" if est.get("lo") is not None else " (no interval)"
        return f"{est['value']:.2f}×{ci}"
    if scale in ("IS", "d"):  # an IS difference or an effect size: plain numbers
        ci = f" [{est['lo']:+.2f}, {est['hi']:+.2f}]" if est.get("lo") is not None else ""
        return f"{est['value']:+.2f}{ci}"
    if scale != "log_odds":
        return pct(est, True)
    ci = f" [{est['lo']:+.2f}, {est['hi']:+.2f}]" if est.get("lo") is not None else ""
    return f"{est['value']:+.2f} logit{ci}{seeds_text(est, pct=False)}"


def sensitivity_markdown(sens: dict[str, Any], ks: Sequence[Any] | None = None, scales: Sequence[str] | None = None,
                         rows: Sequence[str] | None = None) -> str:
    """One table: a row per (k, scale) — in ``ks`` x ``scales`` order where given, else the cells' —
    the pooled estimate with its verdict, then each configuration's (``rows``, default ``sens["rows"]``)."""
    cells, rows = sens["cells"], list(rows if rows is not None else sens.get("rows", []))
    order = list(cells) if ks is None or scales is None else [(k, s) for k in ks for s in scales if (k, s) in cells]

    def cell(c: Mapping[str, Any], scale: str, r: str | None) -> str:
        if r is None:
            return f"{_fmt(c['pooled'], scale)} {c['verdict']}"
        return f"{_fmt(c['per_row'].get(r), scale)} {c['per_row_verdict'].get(r, 'n/a')}"
    table = [["—" if k is None else k, scale, *(cell(cells[(k, scale)], scale, r) for r in (None, *rows))]
             for k, scale in order]
    say = ("the verdict depends on " + " and on ".join(sens["depends_on"])) if sens["depends_on"] else "the verdict holds in every cell"
    below = ", ".join(sens.get("below_floor") or [])
    if sens.get("not_evaluated"):
        say += f" (k = {', '.join(map(str, sens['not_evaluated']))} not evaluated: too few hits there)"
    floor = (f" Below the retrieval floor (standard Rc@{sens['k_table']} < {100 * sens['floor']:.0f}%; "
             "shown, not pooled): "
             f"{below}." if below else "")
    pooled = sens.get("pooled_label", "pooled (configurations that retrieve)")
    return (markdown_table(["k", "scale", pooled, *rows], table)
            + f"\nFinding {sens.get('finding', 1)} across k and scales: {say}.{floor}\n")


