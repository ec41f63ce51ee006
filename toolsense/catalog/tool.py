"""The typed tool record and the naming rule shared by every index."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unidecode import unidecode

SEP = "&&"


def canonical_name(raw: str) -> str:
    """The unidecoded ``Service&&API`` string, exactly the way ToolGen forms virtual tokens.

    Case and whitespace are kept (ToolGen's token list keeps double spaces), so names that
    differ only in case or whitespace stay distinct tools; catalogs report such pairs instead of
    merging them.
    """
    return unidecode(raw)


def split_name(name: str) -> tuple[str, str]:
    """Split ``Service&&API`` at the first ``&&`` (some API names contain ``&&`` themselves)."""
    service, sep, api = name.partition(SEP)
    if not sep:
        raise ValueError(f"tool name {name!r} has no {SEP!r} between service and API")
    return service, api


def loose_key(name: str) -> str:
    """Key under which names equal up to case or whitespace collide (for reporting only)."""
    return " ".join(name.lower().split())


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str = "string"
    required: bool = False
    description: str = ""


@dataclass(frozen=True)
class Tool:
    """One API of one service. ``name`` is canonical; ``raw_name`` is as read from the file."""

    name: str
    service: str
    api: str
    raw_name: str = ""
    tool_title: str = ""
    tool_description: str = ""
    api_title: str = ""
    api_description: str = ""
    category: str | None = None
    parameters: tuple[Parameter, ...] = field(default_factory=tuple)

    @classmethod
    def from_name(cls, raw_name: str, **fields: Any) -> "Tool":
        name = canonical_name(raw_name)
        service, api = split_name(name)
        return cls(name=name, service=service, api=api, raw_name=raw_name, **fields)

    @property
    def token(self) -> str:
        """The flat (ToolGen atomic) virtual token of this tool."""
        return f"<<{self.name}>>"

    def text(self) -> str:
        """Human-readable description used for encoders, BM25 and memorization prompts."""
        parts = [f"Service: {self.tool_title or self.service}"]
        if self.tool_description:
            parts.append(f"Service description: {self.tool_description.strip()}")
        parts.append(f"API: {self.api_title or self.api}")
        if self.api_description:
            parts.append(f"API description: {self.api_description.strip()}")
        if self.parameters:
            ps = ", ".join(f"{p.name} ({p.type}{', required' if p.required else ''})" for p in self.parameters)
            parts.append(f"Parameters: {ps}")
        return "\n".join(parts)

    def description(self) -> str:
        """The description a tok2desc target reproduces."""
        desc = self.api_description.strip() or self.tool_description.strip()
        return f"{self.tool_title or self.service} / {self.api_title or self.api}: {desc}".strip()
