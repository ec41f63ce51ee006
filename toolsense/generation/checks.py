"""Code validation of generated items: what any accepted item must satisfy, whatever the LLM."""

from __future__ import annotations

import re

from toolsense.catalog import Tool
from toolsense.catalog.tool import fold_text

_IDENT = re.compile(r"[_/{}]|[a-z][A-Z]")


def leaked_names(text: str, tools: list[Tool]) -> list[str]:
    """Tool, service or identifier-like API names that appear verbatim in ``text``.

    Service titles always count; API titles only when they look like identifiers
    (``get_weather``, ``/v2/jobs``, ``getWeather``), since plain words ("Translate") are fair
    for a user to type."""
    low = text.lower()
    hits = []
    for t in tools:
        for name in (t.tool_title or t.service, t.service):
            if len(name) >= 4 and name.lower() in low:
                hits.append(name)
        api = t.api_title or t.api
        if len(api) >= 4 and _IDENT.search(api) and api.lower() in low:
            hits.append(api)
    if "<<" in text or "&&" in text:
        hits.append("virtual-token syntax")
    return sorted(set(hits))


def check_query(query: object, tools: list[Tool], max_words: int, seen: set[str]) -> str | None:
    """None when the query is acceptable, else the reason for rejecting it."""
    if not isinstance(query, str) or not query.strip():
        return "no query in reply"
    words = len(query.split())
    if words < 3:
        return f"query too short ({words} words)"
    if words > max_words:
        return f"query too long ({words} > {max_words} words)"
    leaked = leaked_names(query, tools)
    if leaked:
        return f"query names the tool: {leaked}"
    if fold_text(query) in seen:
        return "duplicate query"
    return None


def check_mcq(obj: dict | None, tool: Tool) -> str | None:
    if obj is None:
        return "reply is not a JSON object"
    q, c, w = obj.get("question"), obj.get("correct_answer"), obj.get("wrong_answers")
    if not isinstance(q, str) or not q.strip():
        return "missing question"
    if not isinstance(c, str) or not c.strip():
        return "missing correct_answer"
    if not isinstance(w, list) or len(w) != 3 or not all(isinstance(x, str) and x.strip() for x in w):
        return "wrong_answers must be 3 non-empty strings"
    norm = {fold_text(x) for x in w}
    if len(norm) != 3 or fold_text(c) in norm:
        return "answers are not distinct"
    leaked = leaked_names(q, [tool])
    if leaked:
        return f"question names the tool: {leaked}"
    return None


def check_qa(obj: dict | None, tool: Tool, target: str) -> str | None:
    if obj is None:
        return "reply is not a JSON object"
    q, a = obj.get("question"), obj.get("answer")
    if not isinstance(q, str) or not q.strip().endswith("?"):
        return "question missing or not a question"
    if a not in ("Yes", "No"):
        return f"answer must be Yes or No, got {a!r}"
    if a != target:
        return f"answer {a} but {target} was asked for"
    leaked = leaked_names(q, [tool])
    if leaked:
        return f"question names the tool: {leaked}"
    return None
