"""Code validation of generated items: what any accepted item must satisfy, whatever the LLM.

Name leaks: a query or question may not contain the *distinctive* name of an answer tool —
its service / tool title or its API title — matched on word boundaries after lower-casing and
transliterating accents away (unidecode). A name is distinctive when one of its words is not a
common English word (``wordfreq`` Zipf frequency below :data:`COMMON_ZIPF`, or shorter than 4
letters counts as not distinctive): "Customer", "Guardian", "Job Search" are words a user may
type for what they want; "Upwork Jobs API", "SkyCast" or "getWeather" are names. Identifier-
like API titles (``get_weather``, ``/v2/jobs``, ``getWeather``) always count.
"""

from __future__ import annotations

import re
from functools import lru_cache

from unidecode import unidecode

from toolsense.catalog import Tool
from toolsense.catalog.tool import fold_text

_IDENT = re.compile(r"[_/{}]|[a-z][A-Z]")
_WORD = re.compile(r"[a-z0-9]+")
COMMON_ZIPF = 3.5
"""Words at least this frequent in English (Zipf scale: 3.5 ≈ 3 per million words) are common:
"translate", "compass", "spotify" are; "upwork", "skycast" are not."""
GENERIC_QUESTIONS = (
    "what is the primary function of this tool", "what is the main function of this tool",
    "what is the purpose of this tool", "what is the main purpose of this tool", "what does this tool do",
    "what is this tool used for", "what is the primary purpose of this tool", "what can this tool do",
    "what is the function of this tool", "what does this tool primarily do", "does this tool work",
    "is this tool useful", "what kind of tool is this", "what type of service does this tool provide",
)
"""Questions that fit nearly every tool (the released MCQ asks the first 58 times): rejected
after normalisation (lower case, punctuation dropped)."""
_FUNCTION_WORDS = frozenset(
    "this that tool what which does do the a an is are for with from into about when where who how can will "
    "would could should does using used use uses user users their there these those your you its it of to in on "
    "and or not any some such main primary purpose function functions provide provides service data information "
    "specific allow allows help helps perform performs feature features kind type api".split())


def normalise(text: str) -> str:
    """Lower case, accents transliterated, punctuation dropped, single spaces."""
    return " ".join(_WORD.findall(unidecode(text).lower()))


@lru_cache(maxsize=65536)
def is_common_word(word: str) -> bool:
    from wordfreq import zipf_frequency

    return len(word) < 4 or zipf_frequency(word, "en") >= COMMON_ZIPF


def is_distinctive(name: str) -> bool:
    """A name a user would not type by chance: some word of it is rare in English."""
    return any(not is_common_word(w) for w in normalise(name).split())


def _mentions(text: str, name: str) -> bool:
    """Word-boundary match, case- and accent-insensitive: identifiers verbatim (``live_scores``
    is not "live scores"), other names as normalised phrases (punctuation ignored)."""
    if _IDENT.search(name):
        phrase, text = re.escape(unidecode(name).lower()), unidecode(text).lower()
    else:
        phrase, text = re.escape(normalise(name)), normalise(text)
    return bool(phrase) and re.search(rf"(?<![a-z0-9]){phrase}(?![a-z0-9])", text) is not None


def leaked_names(text: str, tools: list[Tool]) -> list[str]:
    """The answer tools' distinctive or identifier-like service/tool/API names that ``text``
    contains (see the module docstring), plus "virtual-token syntax" for ``<<...>>`` / ``&&``."""
    hits = []
    for t in tools:
        names = {normalise(n): n for n in (t.service, t.api_title or t.api, t.tool_title) if n}  # one per spelling, the title's
        for name in names.values():
            if (is_distinctive(name) or _IDENT.search(name)) and _mentions(text, name):
                hits.append(name)
    if "<<" in text or "&&" in text:
        hits.append("virtual-token syntax")
    return sorted(set(hits))


def copies_example(query: str, examples: list[str]) -> str | None:
    """The few-shot example ``query`` copies or nearly copies (normalised text equal, word
    overlap >= 0.7, or character similarity >= 0.85), else None."""
    from difflib import SequenceMatcher

    q = normalise(query)
    for e in examples:
        n = normalise(e)
        if q == n or _overlap(q, n) >= 0.7 or SequenceMatcher(None, q, n).ratio() >= 0.85:
            return e
    return None


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


TIER_SIZES = {"easy": (1, 1), "medium": (2, 3), "hard": (4, None)}
"""How many answer tools each tier's answer set holds (inclusive; None = no upper bound)."""


def check_answer_set(numbers: object, pool: list[str], anchor: str, tier: str) -> tuple[list[str] | None, str | None]:
    """The writer's answer set (1-based pool numbers) as tool names, or the reason it is not
    acceptable: not a list of pool numbers, the anchor missing, or a size outside the tier."""
    if not isinstance(numbers, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return None, "answer set is not a list of pool numbers"
    outside = [n for n in numbers if not 1 <= n <= len(pool)]
    if outside:
        return None, f"answer set outside the pool: {outside}"
    names = list(dict.fromkeys(pool[n - 1] for n in numbers))
    if anchor not in names:
        return None, "answer set misses the anchor tool"
    lo, hi = TIER_SIZES[tier]
    if len(names) < lo or (hi is not None and len(names) > hi):
        return None, f"answer set of {len(names)} does not fit tier {tier} ({lo}-{hi or 'more'})"
    return names, None


def card_words(tool: Tool) -> set[str]:
    text = " ".join((tool.tool_title, tool.service, tool.tool_description, tool.api_title, tool.api, tool.api_description))
    return {w[:5] for w in normalise(text).split() if len(w) >= 4 and w not in _FUNCTION_WORDS}


def generic_question(question: str, tool: Tool, need_card_word: bool = True) -> str | None:
    """Why a probe question would fit most tools (a generic template, or — when
    ``need_card_word`` — not one content word of the tool's card, compared on 5-letter stems),
    else None. A QA question whose answer is No asks about what the tool does *not* do, so its
    words need not come from the card."""
    norm = normalise(question)
    if norm in GENERIC_QUESTIONS:
        return "generic question (template)"
    if not need_card_word:
        return None
    content = {w[:5] for w in norm.split() if len(w) >= 4 and w not in _FUNCTION_WORDS}
    if not content & card_words(tool):
        return "generic question (no content word from the tool card)"
    return None


AUXILIARIES = frozenset("do does did is are was were am can could will would shall should may might must has have had".split())
"""The words a yes/no question starts with ("Does this tool ...?", "Can it ...?")."""
WH_WORDS = frozenset("what which who whom whose where when why how".split())
_SELF_WORDS = frozenset("this that the a an tool tools api apis service it its one above none all of".split())


def _clauses(question: str) -> list[list[str]]:
    """The words of the question, and of what follows its first comma ("Given a city, does ...")."""
    norm = unidecode(question).lower()
    parts = [norm] + ([norm.split(",", 1)[1]] if "," in norm else [])
    return [_WORD.findall(p) for p in parts]


def yes_no_form(question: str) -> bool:
    """A yes/no question by its form: it ends with "?" and its (main) clause starts with an
    auxiliary verb — "What does this tool return ...?" answered "Yes" is not one."""
    return question.strip().endswith("?") and any(words and words[0] in AUXILIARIES for words in _clauses(question))


def question_form(question: str) -> bool:
    """A question, not a statement: it ends with "?" and starts with (or, after a first comma,
    continues with) an interrogative or auxiliary word, or holds an interrogative word."""
    if not question.strip().endswith("?"):
        return False
    words = _clauses(question)
    return any(w and (w[0] in AUXILIARIES or w[0] in WH_WORDS) for w in words) or bool(WH_WORDS & set(words[0]))


def catalog_names(tools) -> frozenset[str]:
    """Every way a tool of the catalog is named, normalised: service / tool title, API title,
    API id, and "service api" / "title / api" (the card's own header)."""
    names = set()
    for t in tools:
        svc, api = (t.tool_title or t.service), (t.api_title or t.api)
        names.update(normalise(n) for n in (t.service, t.tool_title, t.api_title, t.api, f"{svc} {api}", f"{t.service} {t.api}",
                                             t.raw_name or t.name, t.name) if n)
    names.discard("")
    return frozenset(names)


def _overlap(a: str, b: str) -> float:
    wa, wb = set(normalise(a).split()), set(normalise(b).split())
    return len(wa & wb) / max(1, len(wa | wb))


def bad_option(option: str, question: str, names: frozenset[str]) -> str | None:
    """Why an MCQ option is no answer about the tool: a tool's name (this one's or another
    catalog tool's), a reference to the tool itself ("this tool", "none of the above"), or the
    question's own wording; None when it is an answer."""
    norm = normalise(option)
    if norm in names:
        return "an option is a tool name, not an answer about the tool"
    if not set(norm.split()) - _SELF_WORDS:
        return "an option only refers to the tool ('this tool')"
    if norm == normalise(question) or (len(norm.split()) >= 4 and norm in normalise(question)) or _overlap(option, question) >= 0.8:
        return "an option repeats the question"
    return None


def unsupported_answer(answer: str, tool: Tool) -> str | None:
    """Where code can tell: an answer with content words, none of which the tool's card holds
    (5-letter stems), is not supported by the card."""
    content = {w[:5] for w in normalise(answer).split() if len(w) >= 4 and w not in _FUNCTION_WORDS}
    if content and not content & card_words(tool):
        return "the tool card does not support the correct answer (no content word in common)"
    return None


def check_mcq(obj: dict | None, tool: Tool, names: frozenset[str] = frozenset()) -> str | None:
    """Form and content of a written MCQ item; ``names`` (:func:`catalog_names`) are the tool
    names no option may be (this tool's own are always checked)."""
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
    if not question_form(q):
        return "question is a statement, not a question"
    leaked = leaked_names(q, [tool])
    if leaked:
        return f"question names the tool: {leaked}"
    reason = generic_question(q, tool)
    names = names | catalog_names([tool])
    for option in [c, *w]:
        reason = reason or bad_option(option, q, names)
    leaked = leaked_names(c, [tool])
    return reason or (f"correct answer names the tool: {leaked}" if leaked else None) or unsupported_answer(c, tool)


def check_qa(obj: dict | None, tool: Tool, target: str) -> str | None:
    if obj is None:
        return "reply is not a JSON object"
    q, a = obj.get("question"), obj.get("answer")
    if not isinstance(q, str) or not q.strip().endswith("?"):
        return "question missing or not a question"
    if not yes_no_form(q):
        return "not a yes/no question (it must start with an auxiliary verb: Does, Is, Can, ...)"
    if a not in ("Yes", "No"):
        return f"answer must be Yes or No, got {a!r}"
    if a != target:
        return f"answer {a} but {target} was asked for"
    leaked = leaked_names(q, [tool])
    if leaked:
        return f"question names the tool: {leaked}"
    return generic_question(q, tool, need_card_word=target == "Yes")
