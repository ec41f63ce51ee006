"""Structured output from OpenAI-compatible servers that each take a different ``response_format``.

OpenAI and vLLM take ``json_schema``; llama-cpp-python's server answers it with a 500 and takes
``json_object`` with a ``schema`` (turned into a decoding grammar); LM Studio takes only
``json_schema``; an older server may take none. So the format is negotiated, per server, down
the :data:`LADDER`: ``json_schema`` -> ``json_object`` -> plain text. A server's refusal is
recognised by its body naming the format (:func:`refuses_format`), whatever its status code
(400, 422, 500), is not retried as a transient error, and is remembered for the process
(:data:`SERVER_FORMATS`, keyed by the server's base URL), so no later call, client or run in
the same process asks again. Below ``json_schema`` nothing guarantees the reply's shape: it is
parsed and checked against the schema (:func:`schema_error`) by the caller.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Optional

LADDER = ("json_schema", "json_object", "text")
"""Formats in the order they are tried; ``text`` sends no ``response_format``."""

_NAMES_FORMAT = re.compile(r"response[_ ]?format|json[_ ]?schema|json[_ ]?object", re.I)


def response_format(rung: str, schema: dict) -> Optional[dict]:
    """The ``response_format`` request field of ``rung`` (None for ``text``)."""
    if rung == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": schema.get("title", "reply"), "schema": schema, "strict": True}}
    if rung == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def refuses_format(status: Optional[int], body: str) -> bool:
    """Whether an error answer (any 4xx / 5xx) to a request carrying ``response_format`` says
    the server does not take that format: its body names it."""
    return status is not None and status >= 400 and bool(_NAMES_FORMAT.search(body))


class FormatMemory:
    """What each server (by base URL) refused and which format it has answered; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refused: dict[str, set[str]] = {}
        self._answered: dict[str, set[str]] = {}

    def rung(self, server: str, start: str) -> str:
        """The first format from ``start`` down the ladder that ``server`` has not refused."""
        with self._lock:
            refused = self._refused.get(server, set())
        return next(r for r in LADDER[LADDER.index(start):] if r not in refused or r == "text")

    def answered(self, server: str, rung: str) -> bool:
        with self._lock:
            return rung in self._answered.get(server, set())

    def record(self, server: str, rung: str, ok: bool) -> None:
        with self._lock:
            (self._answered if ok else self._refused).setdefault(server, set()).add(rung)

    def forget(self) -> None:
        with self._lock:
            self._refused.clear()
            self._answered.clear()


SERVER_FORMATS = FormatMemory()
"""This process's memory of every server's formats (shared by writers and judges on one server)."""

_TYPES = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float), "boolean": bool}


def schema_error(obj: Any, schema: dict, where: str = "reply") -> Optional[str]:
    """The first way ``obj`` breaks ``schema`` ("reply.tools[0]: expected integer, got 'a'"), or
    None. Covers what ``prompts.SCHEMAS`` use: type, properties, required,
    additionalProperties=false, items, minItems / maxItems, enum, minimum / maximum."""
    kind = schema.get("type")
    if kind in _TYPES and (not isinstance(obj, _TYPES[kind]) or (isinstance(obj, bool) and kind != "boolean")):
        return f"{where}: expected {kind}, got {obj!r:.60}"
    if "enum" in schema and obj not in schema["enum"]:
        return f"{where}: {obj!r:.60} is not one of {schema['enum']}"
    if kind in ("integer", "number"):
        if obj < schema.get("minimum", obj) or obj > schema.get("maximum", obj):
            return f"{where}: {obj} is outside [{schema.get('minimum', '-inf')}, {schema.get('maximum', 'inf')}]"
    if kind == "array":
        if not schema.get("minItems", 0) <= len(obj) <= schema.get("maxItems", len(obj)):
            return f"{where}: {len(obj)} items, expected {schema.get('minItems', 0)}-{schema.get('maxItems', 'any')}"
        return next((e for i, v in enumerate(obj) if (e := schema_error(v, schema.get("items", {}), f"{where}[{i}]"))), None)
    if kind == "object":
        props = schema.get("properties", {})
        missing = [k for k in schema.get("required", []) if k not in obj]
        if missing:
            return f"{where}: missing {missing}"
        extra = sorted(set(obj) - set(props)) if schema.get("additionalProperties") is False else []
        if extra:
            return f"{where}: unexpected {extra}"
        return next((e for k, v in obj.items() if k in props and (e := schema_error(v, props[k], f"{where}.{k}"))), None)
    return None
