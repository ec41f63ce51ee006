"""Deterministic MCQ and QA probes for a catalog (the demo probes are made with this).

What they test: whether a model knows a *property the tool's card implies but does not
state*, so no option can be copied from the card (``card`` mode) or from a tok→desc training
target (TG-3FM / TG-5FM learn to write the API description). The probes of v1 asked "What does
this tool do?" with the API description verbatim as the answer: with the card in the prompt
that was a string-matching task, and for the memorization formats their own training target.

How they are made (recorded in each item's ``made_by``):
- MCQ, one per tool, on one of two properties:
  * *input* (even catalog positions, for tools with required parameters): "Which input must a
    call to this tool provide?"; the answer is its required parameters ("origin and
    destination"); the three wrong answers are the required inputs of the most similar tools
    (TF-IDF cosine of the descriptions, ties by catalog order) that lie in another category and
    share no parameter name with the tool, so no distractor is also right. The card never lists
    parameters; its description implies them ("... for a location").
  * *category* (odd positions, and tools without required parameters): "Which category of
    the catalog does this tool belong to?"; the answer is its category, the wrong answers the
    categories of the most similar tools in other categories, leaving out the categories of its
    :data:`CONFUSABLE` nearest such tools (a streaming guide is "Entertainment"; "Movies" would be
    arguable). The card gives the service and the description, not the category.
- QA, one per tool: "Does this tool belong to the <c> category?" with <c> its own category
  (answer Yes) for even catalog positions and, for odd ones, the first category an MCQ would
  offer as a wrong answer (answer No), so the file is balanced.
Options are stored correct-first; evaluation shuffles. A catalog without categories falls back
to the service as the category (then the card does state it: say so when reporting).

Regenerate the demo files: ``python -m toolsense.generation.probe_gen``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from toolsense.catalog import Catalog, Tool, load_demo_catalog
from toolsense.catalog.loaders import DEMO_DIR

MADE_BY = "toolsense.generation.probe_gen v2 (implied properties: required input or category; TF-IDF hard negatives)"
MCQ_QUESTIONS = {"input": "Which input must a call to this tool provide?",
                 "category": "Which category of the catalog does this tool belong to?"}
QA_TEMPLATE = "Does this tool belong to the {category} category?"


def _desc(tool: Tool) -> str:
    return (tool.api_description or tool.tool_description or tool.api).strip()


def _record(tool: Tool) -> dict:
    return {"tool_name": tool.name, "tool_title": tool.tool_title, "tool_description": tool.tool_description,
            "api_title": tool.api_title, "api_description": tool.api_description}


def category(tool: Tool) -> str:
    """The tool's category as an option reads it ("News_Media" -> "News Media"); the service without one."""
    return " ".join((tool.category or tool.tool_title or tool.service).replace("_", " ").split())


def required_input(tool: Tool) -> str:
    """Its required parameters as an answer ("origin and destination"); "" when it has none."""
    names = [p.name for p in tool.parameters if p.required]
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def similarity_order(catalog: Catalog) -> list[np.ndarray]:
    """For each tool, every other tool by descending TF-IDF cosine of the descriptions, ties by catalog order."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    emb = TfidfVectorizer(stop_words="english").fit_transform([_desc(t) for t in catalog])
    sim = (emb @ emb.T).toarray()
    idx = np.arange(len(catalog))
    return [np.array([j for j in np.lexsort((idx, -sim[i])) if j != i]) for i in idx]


CONFUSABLE = 5
"""Categories of a tool's this many most similar tools from other categories are confusable
with its own ("Entertainment" vs "Movies" for a streaming guide): never a category distractor."""


def _distractors(tool: Tool, order: np.ndarray, catalog: Catalog, prop, n: int = 3) -> list[str]:
    """``n`` distinct values of ``prop`` taken from the most similar tools in *another category*
    whose value differs from the tool's (inputs: sharing no parameter name with it; categories:
    not :data:`CONFUSABLE` with it), so no wrong answer is also right."""
    own = prop(tool)
    own_words = set(own.replace(",", " ").split()) - {"and"}
    others = [catalog[int(j)] for j in order if category(catalog[int(j)]) != category(tool)]
    near = {category(t) for t in others[:CONFUSABLE]} if prop is category else set()
    picked: list[str] = []
    for other in others:
        value = prop(other)
        words = set(value.replace(",", " ").split()) - {"and"}
        if not value or value in picked or value == own or value in near:
            continue
        if prop is required_input and words & own_words:
            continue
        picked.append(value)
        if len(picked) == n:
            return picked
    raise ValueError(f"tool {tool.name!r}: fewer than {n} distinct {prop.__name__} values in other categories of the catalog")


def _mcq(i: int, tool: Tool, order: np.ndarray, catalog: Catalog, prefix: str) -> dict:
    kind = "input" if i % 2 == 0 and required_input(tool) else "category"
    prop = required_input if kind == "input" else category
    return {"id": f"{prefix}-mcq-{i:04d}", "question": MCQ_QUESTIONS[kind], "correct_answer": prop(tool),
            "wrong_answers": _distractors(tool, order, catalog, prop), "tool": _record(tool), "property": kind,
            "made_by": MADE_BY}


def make_probes(catalog: Catalog, prefix: str = "demo") -> tuple[list[dict], list[dict]]:
    """(MCQ items, QA items) in the released probe formats, one of each per tool (see the
    module docstring for what each asks)."""
    orders = similarity_order(catalog)
    mcq, qa = [], []
    for i, (tool, order) in enumerate(zip(catalog, orders)):
        mcq.append(_mcq(i, tool, order, catalog, prefix))
        yes = i % 2 == 0
        asked = category(tool) if yes else _distractors(tool, order, catalog, category, 1)[0]
        qa.append({"id": f"{prefix}-qa-{i:04d}", "question": QA_TEMPLATE.format(category=asked), "answer": "Yes" if yes else "No",
                   "tool": _record(tool), "property": "category", "made_by": MADE_BY})
    return mcq, qa


def write_probes(catalog: Catalog, out_dir: str | Path, prefix: str = "demo") -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    mcq, qa = make_probes(catalog, prefix)
    paths = out_dir / "probes_mcq.jsonl", out_dir / "probes_qa.jsonl"
    for path, rows in zip(paths, (mcq, qa)):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return paths


if __name__ == "__main__":
    for p in write_probes(load_demo_catalog(), DEMO_DIR):
        print("wrote", p)
