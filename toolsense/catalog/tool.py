"""The typed tool record and the naming rule shared by every index."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unidecode import unidecode

SEP = "&&"


def canonical_name(raw: str) -> str:
    """A tool's canonical name: ``Service&&API`` exactly as written, which is how ToolGen forms
    its virtual tokens (its 46,984-token list keeps accents, Cyrillic, CJK and emoji: 483 tokens
    are not ASCII, and 38 of the 40 accented ToolSense release names appear verbatim in it).

    Case and whitespace are kept too (the token list has names differing only in those), so
    such names stay distinct tools; catalogs report them (:func:`loose_key`) instead of merging.
    """
    return raw


def split_name(name: str) -> tuple[str, str]:
    """Split ``Service&&API`` at the first ``&&`` (some API names contain ``&&`` themselves)."""
    service, sep, api = name.partition(SEP)
    if not sep:
        raise ValueError(f"tool name {name!r} has no {SEP!r} between service and API")
    return service, api


def fold_text(text: str) -> str:
    """``text`` lower-cased with runs of whitespace made one space: the one key under which two
    texts count as the same (near-duplicate tool names, generated queries and answers)."""
    return " ".join(text.lower().split())


def loose_key(name: str) -> str:
    """``name`` up to case, whitespace and transliteration (unidecode), service and API apart:
    the key under which near-duplicate names collide (reported, and used to match a name to
    another catalog's record when no record has exactly that name)."""
    def norm(part: str) -> str:
        return fold_text(unidecode(part))

    service, sep, api = name.partition(SEP)
    return f"{norm(service)}{SEP}{norm(api)}" if sep else norm(name)


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
