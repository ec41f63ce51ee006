"""MCQ and QA factual probes about single tools, checked by code and by an LLM judge."""

from __future__ import annotations

import numpy as np

from toolsense.catalog import Catalog, Tool
from toolsense.generation import prompts
from toolsense.generation.checks import catalog_names, check_mcq, check_qa
from toolsense.generation.dedupe import QuestionDeduper
from toolsense.generation.llm import ChatLLM, ask_json, ask_judge, unparsed_reason
from toolsense.generation.pools import Neighbourhoods
from toolsense.generation.prompts import usable_description


def make_mcq_item(tool: Tool, catalog: Catalog, nb: Neighbourhoods, writer: ChatLLM, judge: ChatLLM | None,
                  temperature: float, attempt: int, seed: int, dedupe: QuestionDeduper,
                  names: frozenset[str] | None = None) -> tuple[dict | None, str | None, dict]:
    """``names``: the catalog's tool names (:func:`~toolsense.generation.checks.catalog_names`,
    computed here when not given) that no option may be."""
    names = catalog_names(catalog) if names is None else names
    similar = [t for t in (catalog[n] for n in nb.nearest(tool.name, 10)) if usable_description(t)][:3]
    obj, reply = ask_json(writer, prompts.mcq_writer(tool, similar), stage="mcq_writer",
                          schema=prompts.SCHEMAS["mcq_writer"], temperature=temperature, seed=attempt)
    trace = {"writer_reply": str(reply)}
    reason = unparsed_reason(reply, "writer reply") if obj is None else check_mcq(obj, tool, names) or dedupe.reason(obj["question"])
    if reason:
        return None, reason, trace
    item = {"question": obj["question"].strip(), "correct_answer": obj["correct_answer"].strip(),
            "wrong_answers": [w.strip() for w in obj["wrong_answers"]]}
    if judge is not None:
        options = [item["correct_answer"]] + item["wrong_answers"]
        perm = np.random.default_rng([seed, attempt, catalog.index_of(tool.name)]).permutation(4)
        shown = [options[i] for i in perm]
        verdict, trace["judge_replies"] = ask_judge(judge, prompts.mcq_judge(tool, item["question"], shown),
                                                    stage="mcq_judge", schema=prompts.SCHEMAS["mcq_judge"])
        if verdict is None:
            return None, "judge reply is not a JSON object", trace
        letter = str(verdict.get("answer", "")).strip()[:1].upper()
        trace["judge_answer"] = letter
        if letter not in "ABCD" or not letter or shown["ABCD".index(letter)] != item["correct_answer"]:
            return None, "judge did not pick the correct answer", trace
    return item, None, trace


def make_qa_item(tool: Tool, target: str, writer: ChatLLM, judge: ChatLLM | None, temperature: float,
                 attempt: int, dedupe: QuestionDeduper) -> tuple[dict | None, str | None, dict]:
    obj, reply = ask_json(writer, prompts.qa_writer(tool, target), stage="qa_writer",
                          schema=prompts.SCHEMAS["qa_writer"], temperature=temperature, seed=attempt)
    trace = {"writer_reply": str(reply)}
    reason = unparsed_reason(reply, "writer reply") if obj is None else check_qa(obj, tool, target) or dedupe.reason(obj["question"])
    if reason:
        return None, reason, trace
    if judge is not None:
        verdict, trace["judge_replies"] = ask_judge(judge, prompts.qa_judge(tool, obj["question"]), stage="qa_judge",
                                                    schema=prompts.SCHEMAS["qa_judge"])
        if verdict is None:
            return None, "judge reply is not a JSON object", trace
        trace["judge_answer"] = verdict.get("answer")
        if verdict.get("answer") != target:
            return None, "judge answered differently", trace
    return {"question": obj["question"].strip(), "answer": target}, None, trace
