"""Audit stage 2 (the paper's name; not training's Stage 2) - token classes and counterfactual redaction.

A token class is a set of regular expressions and/or literal values (given in config or
collected from record fields over the whole file). Redacting a class replaces every match with
the class's placeholder, one class at a time, and counts the replacements. Where depends on its
``scope``: ``fields`` - every prompt-bearing field of every record (the tool results and the
other prompt fields alike); ``rendered`` - the prompt as the model reads it, after
``prompt.template`` and ``prompt.section_template`` have added their text: section headers
(``[tool]`` labels), separators, instructions. A ``format`` class needs ``rendered``: those
tokens are in no record field."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Literal, Optional

from toolsense.audit.traces import ToolResult, TraceRecord, TraceSet
from toolsense.utils.errors import ConfigError


@dataclass
class TokenClassConfig:
    name: str = ""
    """Class name; also names the redacted variant in results."""
    patterns: list[str] = field(default_factory=list)
    """Regular expressions (Python ``re`` syntax)."""
    values: list[str] = field(default_factory=list)
    """Literal strings to replace."""
    value_fields: list[str] = field(default_factory=list)
    """Record fields whose values (a string or a list of strings) over the whole file become literals."""
    placeholder: Optional[str] = None
    """Replacement text; None = ``[NAME]`` in upper case."""
    control: bool = False
    """A control class: redacting it should leave the score intact."""
    ignore_case: bool = False
    whole_word: bool = True
    """Literal values match only between word boundaries."""
    scope: Literal["fields", "rendered"] = "fields"
    """fields: the record's prompt-bearing fields; rendered: the rendered prompt messages (template
    text and section headers included; the chat template's own tokens stay the scorer's)."""

    def __post_init__(self) -> None:
        if self.scope not in ("fields", "rendered"):
            raise ValueError(f"redaction.classes[{self.name}].scope must be fields or rendered, got {self.scope!r}")
        if not self.name:
            raise ValueError("redaction.classes[]: every token class needs a name")
        if not (self.patterns or self.values or self.value_fields):
            raise ValueError(f"redaction.classes[{self.name}]: give patterns, values or value_fields")
        for p in self.patterns:
            try:
                re.compile(p)
            except re.error as e:
                raise ValueError(f"redaction.classes[{self.name}].patterns: {p!r} is not a valid regex ({e})") from None

    @property
    def replacement(self) -> str:
        return self.placeholder if self.placeholder is not None else f"[{self.name.upper()}]"


@dataclass
class RedactionConfig:
    enabled: bool = True
    classes: list[TokenClassConfig] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = [c.name for c in self.classes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"redaction.classes: duplicate class name(s) {dup}")
        if "original" in names:
            raise ValueError("redaction.classes: 'original' is reserved for the unredacted variant")


def collect_values(traces: TraceSet, fields: list[str], cls_name: str) -> set[str]:
    out: set[str] = set()
    for f in fields:
        found = False
        for rec in traces.records:
            val = rec.fields.get(f, rec.meta.get(f))
            if val is None:
                continue
            found = True
            vals = val if isinstance(val, list) else [val]
            out.update(str(v) for v in vals if str(v).strip())
        if not found:
            raise ConfigError(f"redaction.classes[{cls_name}].value_fields: field {f!r} is in no record of {traces.source}")
    return out


def compile_class(cfg: TokenClassConfig, traces: TraceSet) -> re.Pattern:
    """One alternation: literal values (longest first, so 'ab' never eats half of 'abc') then patterns."""
    values = set(cfg.values) | collect_values(traces, cfg.value_fields, cfg.name)
    alts = []
    for v in sorted(values, key=lambda v: (-len(v), v)):
        lit = re.escape(v)
        alts.append(rf"(?<!\w){lit}(?!\w)" if cfg.whole_word else lit)
    alts += [f"(?:{p})" for p in cfg.patterns]
    return re.compile("|".join(alts), re.IGNORECASE if cfg.ignore_case else 0)


def redact_record(rec: TraceRecord, pattern: re.Pattern, placeholder: str) -> tuple[TraceRecord, int]:
    n_total = 0
    results = []
    for r in rec.results:
        text, n = pattern.subn(placeholder, r.text)
        results.append(ToolResult(r.tool, text))
        n_total += n
    fields = {}
    for k, v in rec.fields.items():
        fields[k], n = pattern.subn(placeholder, v)
        n_total += n
    return rec.with_texts(results, fields), n_total


def redact(traces: TraceSet, cfg: TokenClassConfig) -> tuple[TraceSet, dict]:
    """The redacted copy of ``traces`` and counts: total replacements, records touched, and
    per tool / prompt field."""
    pattern = compile_class(cfg, traces)
    records, per_record = [], []
    per_part: dict[str, int] = {}
    for rec in traces.records:
        new, n = redact_record(rec, pattern, cfg.replacement)
        records.append(new)
        per_record.append(n)
        for r_old, r_new in zip(rec.results, new.results):
            if r_old.text != r_new.text:
                per_part[r_old.tool] = per_part.get(r_old.tool, 0) + len(pattern.findall(r_old.text))
        for k in rec.fields:
            if rec.fields[k] != new.fields[k]:
                per_part[k] = per_part.get(k, 0) + len(pattern.findall(rec.fields[k]))
    counts = {"replacements": int(sum(per_record)), "records_touched": int(sum(n > 0 for n in per_record)),
              "by_field": dict(sorted(per_part.items())), "per_record": per_record}
    return TraceSet(records, list(traces.tools), traces.source), counts


def redact_messages(messages: list[dict], pattern: re.Pattern, placeholder: str) -> tuple[list[dict], int]:
    """Chat messages with ``pattern`` replaced in every content, and the replacement count."""
    out, n_total = [], 0
    for m in messages:
        text, n = pattern.subn(placeholder, m["content"])
        out.append({**m, "content": text})
        n_total += n
    return out, n_total


def count_rendered(traces: TraceSet, pattern: re.Pattern, render: Callable[[TraceRecord], list[dict]]) -> dict:
    """Replacement counts of a rendered-scope class, in the same shape as ``redact``'s."""
    per_record = [redact_messages(render(rec), pattern, "")[1] for rec in traces.records]
    return {"replacements": int(sum(per_record)), "records_touched": int(sum(n > 0 for n in per_record)),
            "by_field": {"rendered": int(sum(per_record))}, "per_record": per_record}
