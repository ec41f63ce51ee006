"""Tool-trace records: loading, validation and the per-tool views the audit decomposes.

A record is one episode of an agent: an ``id``, a binary ``label``, a partition (cluster) used
to fit on one part and evaluate on the others, an ordered list of tool results ``{tool, text}``
and any other prompt-bearing fields (e.g. the question). Field names come from config.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from toolsense.utils.errors import ConfigError
from toolsense.utils.io import DataError, iter_jsonl, write_jsonl


@dataclass(frozen=True)
class ToolResult:
    tool: str
    text: str


@dataclass(frozen=True)
class TraceRecord:
    id: str
    label: int
    partition: str
    results: tuple[ToolResult, ...]
    fields: dict[str, str] = field(default_factory=dict)
    """Prompt-bearing fields other than the tool results (e.g. ``question``)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Everything else in the record; value-list token classes may read from here."""

    def section(self, tool: str) -> str:
        """All text this record holds from ``tool`` (several calls joined by newlines); "" when
        the tool was never called - an explicit empty section, not an error."""
        return "\n".join(r.text for r in self.results if r.tool == tool)

    def with_texts(self, results: Sequence[ToolResult], fields: dict[str, str]) -> "TraceRecord":
        return replace(self, results=tuple(results), fields=dict(fields))


@dataclass
class TraceSet:
    records: list[TraceRecord]
    tools: list[str]
    """The tool universe in a fixed order (config order, else order of first appearance)."""
    source: str = "<memory>"

    def __len__(self) -> int:
        return len(self.records)

    @property
    def labels(self) -> np.ndarray:
        return np.array([r.label for r in self.records], dtype=int)

    @property
    def partitions(self) -> np.ndarray:
        return np.array([r.partition for r in self.records], dtype=object)

    def split(self, fit: Sequence[str], evaluate: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
        """Boolean masks (fit, eval); ``evaluate=None`` means every partition not in ``fit``."""
        parts = self.partitions
        fit_set = {str(p) for p in fit}
        known = set(parts.tolist())
        missing = sorted(fit_set - known)
        if missing:
            raise DataError(f"{self.source}: fit partition(s) {missing} not present; partitions are {sorted(known)}")
        fit_mask = np.isin(parts, list(fit_set))
        if evaluate is None:
            eval_mask = ~fit_mask
        else:
            ev = {str(p) for p in evaluate}
            if ev & fit_set:
                raise ConfigError(f"data.eval_partitions overlaps data.fit_partitions: {sorted(ev & fit_set)}")
            eval_mask = np.isin(parts, list(ev))
        for name, mask in (("fit", fit_mask), ("eval", eval_mask)):
            if len(set(self.labels[mask].tolist())) < 2:
                raise DataError(f"{self.source}: the {name} partition needs both labels (has {int(mask.sum())} records)")
        return fit_mask, eval_mask

    def sections(self, tool: str) -> list[str]:
        return [r.section(tool) for r in self.records]

    def concatenated(self, tools: Sequence[str] | None = None) -> list[str]:
        """Per record, the sections of ``tools`` (default: all, in universe order) joined."""
        tools = list(tools or self.tools)
        return ["\n".join(r.section(t) for t in tools) for r in self.records]


def parse_record(obj: dict, where: str, id_field: str, label_field: str, partition_field: str,
                 tools_field: str, prompt_fields: Sequence[str]) -> TraceRecord:
    rid = obj.get(id_field)
    if not isinstance(rid, (str, int)) or isinstance(rid, bool) or str(rid) == "":
        raise DataError(f"{where}: field {id_field!r} is missing or not a string/integer")
    label = obj.get(label_field)
    if isinstance(label, bool):
        label = int(label)
    if label not in (0, 1):
        raise DataError(f"{where}: field {label_field!r} must be 0 or 1, got {label!r}")
    part = obj.get(partition_field)
    if part is None or isinstance(part, (dict, list)):
        raise DataError(f"{where}: field {partition_field!r} is missing or not a scalar")
    raw = obj.get(tools_field)
    if not isinstance(raw, list):
        raise DataError(f"{where}: field {tools_field!r} must be a list of {{tool, text}} objects")
    results = []
    for i, r in enumerate(raw):
        if not isinstance(r, dict) or not isinstance(r.get("tool"), str) or not r["tool"].strip():
            raise DataError(f"{where}: field '{tools_field}[{i}].tool' is missing or not a string")
        if not isinstance(r.get("text"), str):
            raise DataError(f"{where}: field '{tools_field}[{i}].text' is missing or not a string")
        results.append(ToolResult(r["tool"], r["text"]))
    fields = {}
    for f in prompt_fields:
        val = obj.get(f)
        if not isinstance(val, str):
            raise DataError(f"{where}: prompt field {f!r} is missing or not a string")
        fields[f] = val
    skip = {id_field, label_field, partition_field, tools_field, *prompt_fields}
    meta = {k: v for k, v in obj.items() if k not in skip}
    return TraceRecord(str(rid), int(label), str(part), tuple(results), fields, meta)


def load_traces(path: str | Path, id_field: str = "id", label_field: str = "label", partition_field: str = "cluster",
                tools_field: str = "tools", prompt_fields: Sequence[str] = (), tools: Sequence[str] | None = None,
                on_missing_tool: str = "empty") -> TraceSet:
    """Read a JSONL trace file. Malformed lines and fields raise DataError naming file:line.

    ``tools`` fixes the tool universe and its order; a result from a tool outside it is an
    error. A record lacking a tool others have gets an empty section (``on_missing_tool=empty``)
    or fails (``error``); either way it is decided here, not silently downstream."""
    records, seen_ids, first_seen = [], {}, {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        rec = parse_record(obj, where, id_field, label_field, partition_field, tools_field, prompt_fields)
        if rec.id in seen_ids:
            raise DataError(f"{where}: duplicate {id_field} {rec.id!r} (first at line {seen_ids[rec.id]})")
        seen_ids[rec.id] = lineno
        for r in rec.results:
            first_seen.setdefault(r.tool, lineno)
            if tools is not None and r.tool not in tools:
                raise DataError(f"{where}: tool {r.tool!r} is not in data.tools {list(tools)}")
        records.append((lineno, rec))
    if not records:
        raise DataError(f"{path}: no records")
    universe = list(tools) if tools is not None else list(first_seen)
    if on_missing_tool == "error":
        for lineno, rec in records:
            have = {r.tool for r in rec.results}
            lacking = [t for t in universe if t not in have]
            if lacking:
                raise DataError(f"{path}:{lineno}: record {rec.id!r} has no result from tool(s) {lacking} (data.on_missing_tool=error)")
    return TraceSet([r for _, r in records], universe, str(path))


def record_to_json(rec: TraceRecord, id_field: str = "id", label_field: str = "label",
                   partition_field: str = "cluster", tools_field: str = "tools") -> dict:
    out = {id_field: rec.id, label_field: rec.label, partition_field: rec.partition}
    out.update(rec.fields)
    out[tools_field] = [{"tool": r.tool, "text": r.text} for r in rec.results]
    out.update(rec.meta)
    return out


def save_traces(traces: TraceSet, path: str | Path) -> None:
    write_jsonl(path, (record_to_json(r) for r in traces.records))
