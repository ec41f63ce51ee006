"""Prompt wording for writers and judges (kept together so a reader sees what the LLM was asked)."""

from __future__ import annotations

from toolsense.catalog import Tool

WRITER_SYSTEM = "You write test data for a benchmark of tool-using assistants. Always reply with one JSON object and nothing else."
JUDGE_SYSTEM = "You are a careful judge of tool-use data. Always reply with one JSON object and nothing else."

TIER_ASK = {
    "easy": "needs exactly this tool",
    "medium": "any one of these functionally equivalent tools can fulfil",
    "hard": "needs ALL of these tools together, as steps of one task",
}


def tool_card(t: Tool) -> str:
    desc = (t.api_description or t.tool_description).strip().replace("\n", " ")
    return f"- {t.tool_title or t.service} / {t.api_title or t.api}: {desc[:300]}"


def rrb_writer(tools: list[Tool], tier: str, max_words: int) -> list[dict]:
    cards = "\n".join(tool_card(t) for t in tools)
    return [
        {"role": "system", "content": WRITER_SYSTEM},
        {"role": "user", "content": (
            f"Tools:\n{cards}\n\nWrite ONE short, natural request (at most {max_words} words) that a real user would "
            f"type and that {TIER_ASK[tier]}. Do not mention any tool, service or API name. "
            'Reply as JSON: {"query": "..."}'
        )},
    ]


def rrb_judge(query: str, pool: list[Tool]) -> list[dict]:
    cards = "\n".join(f"{i + 1}. {tool_card(t)[2:]}" for i, t in enumerate(pool))
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": (
            f"Request: {query}\n\nTools:\n{cards}\n\nWhich tools are needed to fulfil the request? "
            'Reply as JSON: {"tools": [numbers]}'
        )},
    ]


def mcq_writer(tool: Tool, similar: list[Tool]) -> list[dict]:
    return [
        {"role": "system", "content": WRITER_SYSTEM},
        {"role": "user", "content": (
            f"The tool:\n{tool_card(tool)}\nSimilar but different tools:\n" + "\n".join(tool_card(t) for t in similar) +
            "\n\nWrite one multiple-choice question about what THE TOOL does. Refer to it only as 'this tool', never by "
            "name. The correct answer describes the tool; the three wrong answers are plausible but wrong (for example "
            'what the similar tools do). Reply as JSON: {"question": "...", "correct_answer": "...", "wrong_answers": ["...", "...", "..."]}'
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
# JSON schemas for structured output (``response_format``), one per prompt above.
SCHEMAS = {
    "rrb_writer": _obj("rrb_query", query=_STR),
    "rrb_judge": _obj("rrb_verdict", tools={"type": "array", "items": {"type": "integer"}}),
    "mcq_writer": _obj("mcq_item", question=_STR, correct_answer=_STR,
                       wrong_answers={"type": "array", "items": _STR, "minItems": 3, "maxItems": 3}),
    "mcq_judge": _obj("mcq_verdict", answer={"type": "string", "enum": ["A", "B", "C", "D"]}),
    "qa_writer": _obj("qa_item", question=_STR, answer={"type": "string", "enum": ["Yes", "No"]}),
    "qa_judge": _obj("qa_verdict", answer={"type": "string", "enum": ["Yes", "No"]}),
}
