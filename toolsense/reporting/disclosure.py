"""A study report's disclosure: each code change made after the first result that moved a number or a
verdict (commit, what moved, before → after), kept as data in the study's config; the interval method
as implemented beside the one the plan registered, the deviation said; and each rule of the plan
changed after results existed, with the verdict under both (study/plan_report.py computes them)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from toolsense.reporting.tables import markdown_table


def disclosure_section(changes: Sequence[Mapping[str, Any]], registered_interval: str | None, implemented: str) -> str:
    """The section's Markdown: the changes (``commit``, ``what``, ``moved``, ``before``, ``after``) as a table, or a
    line saying none is recorded; then the interval method as implemented, and as registered where that differs."""
    if changes:
        rows = [[f"`{c.get('commit') or '—'}`", c.get("what") or "—", c.get("moved") or "—", c.get("before") or "—",
                 c.get("after") or "—"] for c in changes]
        text = ("Each code change made after the first result existed that moved a number or a verdict (the study "
                "config's `post_data_changes`):\n\n" + markdown_table(["commit", "change", "what moved", "before", "after"], rows))
    else:
        text = "No code change after the first result is recorded in the study config (`post_data_changes`)."
    text += f"\n\n**Intervals as implemented:** {implemented}."
    if registered_interval and registered_interval.strip() != implemented:
        text += (f" **Deviation from the registered plan**, which reads \"{registered_interval}\": the verdicts rest on the "
                 "interval as implemented, not on a bootstrap.")
    return text + "\n"


def changes_markdown(changes: Mapping[int, dict[str, Any]]) -> str:
    """The rules changed after results existed, each with the verdict under both; "" when none."""
    if not changes:
        return ""
    rows = [[n, ", ".join(c["moved"]), c["registered"], c["now"], f"**{c['verdict_registered']}**",
             f"**{c['verdict_now']}**"] for n, c in sorted(changes.items())]
    at = next(iter(changes.values()))["binding_at"]
    return (f"\n**Rule changed after results existed** — against the plan in force when the first result came in "
            f"(recorded {at}): each finding below shows its verdict under both rules (the table cell at the rule's k "
            "and scale where the finding has one, else the finding recomputed).\n\n"
            + markdown_table(["finding", "changed", "registered rule", "rule now", "verdict (registered)",
                              "verdict (now)"], rows) + "\n")
