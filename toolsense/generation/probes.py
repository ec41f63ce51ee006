"""MCQ and QA factual probes about single tools, checked by code and by an LLM judge."""

from __future__ import annotations

import numpy as np

from toolsense.catalog import Catalog, Tool
from toolsense.generation import prompts
from toolsense.generation.checks import check_mcq, check_qa
from toolsense.generation.llm import ChatLLM, parse_json_reply
from toolsense.generation.pools import Neighbourhoods


def make_mcq_item(tool: Tool, catalog: Catalog, nb: Neighbourhoods, writer: ChatLLM, judge: ChatLLM | None,
                  temperature: float, attempt: int, seed: int) -> tuple[dict | None, str | None, dict]:
    similar = [catalog[n] for n in nb.nearest(tool.name, 3)]
    reply = writer(prompts.mcq_writer(tool, similar), temperature=temperature, seed=attempt)
    obj = parse_json_reply(reply)
    trace = {"writer_reply": reply}
    reason = check_mcq(obj, tool)
    if reason:
        return None, reason, trace
    item = {"question": obj["question"].strip(), "correct_answer": obj["correct_answer"].strip(),
            "wrong_answers": [w.strip() for w in obj["wrong_answers"]]}
    if judge is not None:
        options = [item["correct_answer"]] + item["wrong_answers"]
        perm = np.random.default_rng([seed, attempt, catalog.index_of(tool.name)]).permutation(4)
        shown = [options[i] for i in perm]
        verdict = parse_json_reply(judge(prompts.mcq_judge(tool, item["question"], shown), temperature=0.0)) or {}
        letter = str(verdict.get("answer", "")).strip()[:1].upper()
        trace["judge_answer"] = letter
        if letter not in "ABCD" or not letter or shown["ABCD".index(letter)] != item["correct_answer"]:
            return None, "judge did not pick the correct answer", trace
    return item, None, trace


def make_qa_item(tool: Tool, target: str, writer: ChatLLM, judge: ChatLLM | None, temperature: float,
                 attempt: int) -> tuple[dict | None, str | None, dict]:
    reply = writer(prompts.qa_writer(tool, target), temperature=temperature, seed=attempt)
    obj = parse_json_reply(reply)
    trace = {"writer_reply": reply}
    reason = check_qa(obj, tool, target)
    if reason:
        return None, reason, trace
    if judge is not None:
        verdict = parse_json_reply(judge(prompts.qa_judge(tool, obj["question"]), temperature=0.0)) or {}
        trace["judge_answer"] = verdict.get("answer")
        if verdict.get("answer") != target:
            return None, "judge answered differently", trace
    return {"question": obj["question"].strip(), "answer": target}, None, trace
