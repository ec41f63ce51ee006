"""The ``memorization:`` config section: which Stage-1 formats to build and their wording."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from toolsense.utils.config import Seed

DEFAULT_MEMO_SYSTEM = "You are a tool memorizer. Each tool has its own special token."


@dataclass
class MemorizationConfig:
    formats: list[str] = field(default_factory=lambda: ["desc2tok"])
    """Stage-1 formats, names from the MEMORIZATION_FORMATS registry: desc2tok, tok2desc, mcts,
    hier_next, hier_node (the last two need a hierarchical index)."""
    system_prompt: Optional[str] = DEFAULT_MEMO_SYSTEM
    """System message of every Stage-1 prompt; None or use_system_prompt=false sends none."""
    use_system_prompt: bool = False
    """ToolGen's Stage 1 sends no system prompt; switch on to prepend ``system_prompt``."""
    desc2tok_template: str = "{tool_text}"
    """desc2tok user turn; ``{tool_text}`` is Tool.text(). The answer is the tool's token(s)."""
    tok2desc_template: str = "What does the tool {token} do?"
    """tok2desc user turn; ``{token}`` is the tool's token(s). The answer is Tool.description()."""
    mcts_template: str = "{tool_text}\n\nWhich of these tools is described above?\n{candidates}"
    """mcts user turn; ``{candidates}`` lists the gold and K hard-negative tokens, one a line."""
    mcts_negatives: int = 13
    """mcts: K hard negatives per tool (its K nearest tools by encoder cosine)."""
    mcts_encoder: Optional[str] = None
    """mcts: sentence encoder for the nearest neighbours; None = embedded all-MiniLM-L6-v2."""
    hier_next_template: str = "{tool_text}"
    """hier_next user turn; the assistant turn starts with the path prefix and answers the next token."""
    hier_node_template: str = "Which tools are under {node}?"
    """hier_node user turn; ``{node}`` is an internal node's token path."""
    hier_node_max_names: int = 20
    """hier_node: at most this many names in an answer (the rest are elided with '...')."""
    seed: Seed = 0
    """Seed of the candidate shuffles (mcts) and of the example order."""
    format_epochs: dict[str, float] = field(default_factory=dict)
    """Passes over one format's examples per Stage-1 epoch (a format not named: 1.0). Formats
    differ in size (desc2tok, tok2desc, mcts: one example per tool; hier_next: one per level of a
    tool's path; hier_node: one per internal node), so with ``stage1.epochs`` (``stage1.max_steps=-1``)
    each format is seen ``stage1.epochs x format_epochs[format]`` times, whatever the mix: TG, TG-3FM
    and TG-5FM at ``stage1.epochs=1`` each see every one of their formats once. A whole part repeats
    the examples; a fraction keeps a seeded subset (0.5: half, drawn with ``seed``)."""

    def __post_init__(self) -> None:
        if not self.formats:
            raise ValueError("memorization.formats is empty; name at least one Stage-1 format")
        if len(set(self.formats)) != len(self.formats):
            raise ValueError(f"memorization.formats lists a format twice: {self.formats}")
        for name, passes in self.format_epochs.items():
            if name not in self.formats:
                raise ValueError(f"memorization.format_epochs.{name}: {name!r} is not in memorization.formats={list(self.formats)}")
            if not passes > 0:
                raise ValueError(f"memorization.format_epochs.{name} must be > 0 (passes per Stage-1 epoch), got {passes}")
        if self.mcts_negatives < 1:
            raise ValueError(f"memorization.mcts_negatives must be >= 1, got {self.mcts_negatives}")
