"""The operator's log of a study's pauses and kills (a SIGSTOP leaves no trace the code can read), and what each
does to the numbers and the wall time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from toolsense.reporting.tables import markdown_table


@dataclass
class Interruption:
    """One interruption of a study's runs, as its operator logged it (``StudyConfig.interruptions``)."""

    start: str = ""
    """When it began (ISO 8601, UTC)."""
    end: str = ""
    """When the runs went on (ISO 8601, UTC); empty: not yet."""
    action: str = ""
    """What happened: ``paused`` (SIGSTOP, then SIGCONT: no step lost) or ``killed`` (the processes ended; the
    next invocation resumed from the run's last checkpoint, the steps after it redone)."""
    runs: str = ""
    """The run(s) it hit and where they were (``grid/1_tg_h-lora, Stage 2 step ~211 of 300``)."""
    why: str = ""
    """Why (``a fresh-clone CI run needed the cores``, ``the session ended``)."""

    def __post_init__(self) -> None:
        if self.action not in ("paused", "killed"):
            raise ValueError(f"interruptions: action must be 'paused' or 'killed', got {self.action!r} (start {self.start!r})")
        if not self.start:
            raise ValueError(f"interruptions: start is required (action {self.action!r}, runs {self.runs!r})")


def interruptions_table(items: Sequence[Interruption | Mapping[str, Any]]) -> str:
    """The log as a table, with what each kind of interruption does to the numbers."""
    if not items:
        return "No interruption was logged (`interruptions`).\n"
    rows, kinds = [], set()
    for it in items:
        d = it if isinstance(it, Mapping) else it.__dict__
        kinds.add(d["action"])
        rows.append([d["start"], d.get("end") or "—", d["action"], d.get("runs") or "—", d.get("why") or "—"])
    notes = []
    if "paused" in kinds:
        notes.append("A pause (SIGSTOP, then SIGCONT) loses no step and changes no number; the wall time of the invocation "
                     "it hit includes it, so that time overstates the run's.")
    if "killed" in kinds:
        notes.append("A kill ends the processes; the next invocation resumes each unfinished run from its last checkpoint "
                     "(the Trainer's weights, optimizer, scheduler and RNG states; `trainer.save_steps`), redoing the steps "
                     "after it, and the metrics rows logged after that checkpoint are replaced. The invocation killed has no "
                     "end time, so its wall time is not counted.")
    return markdown_table(["from (UTC)", "to (UTC)", "what", "runs hit", "why"], rows) + "\n\n" + " ".join(notes) + "\n"
