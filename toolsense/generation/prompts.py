"""Prompt wording for writers and judges (kept together so a reader sees what the LLM was asked)."""

from __future__ import annotations

from toolsense.catalog import Tool

WRITER_SYSTEM = "You write test data for a benchmark of tool-using assistants. Always reply with one JSON object and nothing else."
JUDGE_SYSTEM = "You are a careful judge of tool-use data. Always reply with one JSON object and nothing else."

TIER_ASK = {
    "easy": "only the anchor tool can fulfil (answer set: exactly 1 tool, the anchor)",
    "medium": "2 or 3 of the candidates fulfil — tools that do the same job, or that the request needs together "
              "(answer set: 2 or 3 tools, the anchor included)",
    "hard": "needs 4 or more of the candidates together, as steps of one task (answer set: 4 or more tools, the anchor included)",
}
_PLACEHOLDERS = {"", "none", "null", "n/a", "na", "-", "no description", "todo"}


def usable_description(t: Tool) -> str:
    """The API description, else the service description when the API's is empty or a
    placeholder ("None"); "" when neither says anything (such a card is skipped)."""
    for desc in (t.api_description, t.tool_description):
        desc = " ".join((desc or "").split())
        if desc.lower().strip(" .") not in _PLACEHOLDERS and len(desc.split()) >= 2:
            return desc
    return ""


def tool_card(t: Tool) -> str:
    return f"- {t.tool_title or t.service} / {t.api_title or t.api}: {usable_description(t)[:300]}"


def numbered_cards(tools: list[Tool]) -> str:
    return "\n".join(f"{i + 1}. {tool_card(t)[2:]}" for i, t in enumerate(tools))


def rrb_writer(anchor: Tool, pool: list[Tool], tier: str, max_words: int, examples: list[str]) -> list[dict]:
    """The generator sees the anchor, its whole pool (numbered) and few-shot queries, and
    chooses the answer set itself (the paper's protocol)."""
    shots = "".join(f"\n- {e}" for e in examples)
    shots = f"\n\nExamples of good requests (short, about the user's intent, no tool names):{shots}" if examples else ""
    return [
        {"role": "system", "content": WRITER_SYSTEM},
        {"role": "user", "content": (
            f"Anchor tool:\n{tool_card(anchor)}\n\nCandidate tools:\n{numbered_cards(pool)}{shots}\n\n"
            f"Write ONE short, natural request (at most {max_words} words) that a real user would type, that the anchor "
            f"tool serves and that {TIER_ASK[tier]}. Then give the numbers of ALL candidate tools that fulfil the request. "
            "Do not mention any tool, service or API name. "
            'Reply as JSON: {"query": "...", "tools": [numbers]}'
        )},
    ]


RUBRIC = ("naturalness", "tier_compliance", "label_correctness")
"""The judge's scores (1-5), as in the paper: is the request natural, does it fit its tier,
are the labelled tools exactly the right ones."""


def rrb_judge(query: str, pool: list[Tool], tier: str, answer: list[int]) -> list[dict]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": (
            f"Request: {query}\n\nTools:\n{numbered_cards(pool)}\n\nTier: {tier} — a request that {TIER_ASK[tier]}.\n"
            f"Proposed answer set: {answer}\n\nScore from 1 (bad) to 5 (good): naturalness (a real user could type it), "
            "tier_compliance (it fits the tier), label_correctness (the proposed set is exactly the tools that fulfil it). "
            "Then list EVERY tool number above that fulfils the request, whether proposed or not. "
            'Reply as JSON: {"naturalness": n, "tier_compliance": n, "label_correctness": n, "satisfying": [numbers]}'
        )},
    ]


def mcq_writer(tool: Tool, similar: list[Tool]) -> list[dict]:
    return [
        {"role": "system", "content": WRITER_SYSTEM},
        {"role": "user", "content": (
            f"The tool:\n{tool_card(tool)}\nSimilar but different tools:\n" + "\n".join(tool_card(t) for t in similar) +
            "\n\nWrite one multiple-choice question about what THE TOOL does. Refer to it only as 'this tool', never by "
            "name. The correct answer describes the tool; the three wrong answers are plausible but wrong (for example "
            'what the similar tools do). Reply as JSON: {"question": "...", "correct_answer": "...", '
            '"wrong_answers": ["...", "...", "..."]}'
        )},
    ]


def mcq_judge(tool: Tool, question: str, options: list[str]) -> list[dict]:
    opts = "\n".join(f"{'ABCD'[i]}. {o}" for i, o in enumerate(options))
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"Tool:\n{tool_card(tool)}\n\nQuestion about this tool: {question}\n{opts}\n\n"
                                    'Which option is correct? Reply as JSON: {"answer": "A"|"B"|"C"|"D"}'},
    ]


def qa_writer(tool: Tool, target: str) -> list[dict]:
    return [
        {"role": "system", "content": WRITER_SYSTEM},
        {"role": "user", "content": (
            f"The tool:\n{tool_card(tool)}\n\nWrite one yes/no question about what this tool does whose correct answer is "
            f"{target}. Refer to it only as 'this tool', never by name. "
            f'Reply as JSON: {{"question": "...?", "answer": "{target}"}}'
        )},
    ]


def qa_judge(tool: Tool, question: str) -> list[dict]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"Tool:\n{tool_card(tool)}\n\nQuestion about this tool: {question}\n\n"
                                    'Reply as JSON: {"answer": "Yes"|"No"}'},
    ]


def _obj(title: str, **props) -> dict:
    return {"title": title, "type": "object", "properties": props, "required": list(props), "additionalProperties": False}


_STR = {"type": "string"}
_INTS = {"type": "array", "items": {"type": "integer"}}
_SCORE = {"type": "integer", "minimum": 1, "maximum": 5}
# JSON schemas for structured output (``response_format``), one per prompt above.
SCHEMAS = {
    "rrb_writer": _obj("rrb_query", query=_STR, tools=_INTS),
    "rrb_judge": _obj("rrb_verdict", **{k: _SCORE for k in RUBRIC}, satisfying=_INTS),
    "mcq_writer": _obj("mcq_item", question=_STR, correct_answer=_STR,
                       wrong_answers={"type": "array", "items": _STR, "minItems": 3, "maxItems": 3}),
    "mcq_judge": _obj("mcq_verdict", answer={"type": "string", "enum": ["A", "B", "C", "D"]}),
    "qa_writer": _obj("qa_item", question=_STR, answer={"type": "string", "enum": ["Yes", "No"]}),
    "qa_judge": _obj("qa_verdict", answer={"type": "string", "enum": ["Yes", "No"]}),
}
