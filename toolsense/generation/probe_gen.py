"""Deterministic MCQ and QA probes for a catalog (the demo probes are made with this).

How they are made (recorded in each item's ``made_by``):
- MCQ, one per tool: "What does this tool do?"; the correct answer is the tool's API
  description, the three wrong answers are the API descriptions of the three *other* tools
  most similar to it (TF-IDF cosine over the descriptions: hard negatives, often from the same
  service), ties broken by catalog order. Options are stored correct-first; evaluation shuffles.
- QA, one per tool: "Is this a correct description of what this tool does: "<d>"?" where
  <d> is the tool's own description (answer Yes) for even catalog positions and its hardest
  negative (answer No) for odd ones, so the file is balanced.

Regenerate the demo files: ``python -m toolsense.generation.probe_gen``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from toolsense.catalog import Catalog, Tool, load_demo_catalog
from toolsense.catalog.loaders import DEMO_DIR

MADE_BY = "toolsense.generation.probe_gen v1 (TF-IDF hard negatives, catalog order)"
QA_TEMPLATE = 'Is this a correct description of what this tool does: "{desc}"?'


def _desc(tool: Tool) -> str:
    return (tool.api_description or tool.tool_description or tool.api).strip()


def _record(tool: Tool) -> dict:
    return {"tool_name": tool.name, "tool_title": tool.tool_title, "tool_description": tool.tool_description,
            "api_title": tool.api_title, "api_description": tool.api_description}


def hard_negatives(catalog: Catalog, n: int = 3) -> list[list[int]]:
    """For each tool, the ``n`` other tools with the most similar distinct descriptions."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    descs = [_desc(t) for t in catalog]
    emb = TfidfVectorizer(stop_words="english").fit_transform(descs)
    sim = (emb @ emb.T).toarray()
    out = []
    for i in range(len(descs)):
        order = np.lexsort((np.arange(len(descs)), -sim[i]))  # by similarity, then catalog order
        picked: list[int] = []
        seen = {descs[i]}
        for j in order:
            if j != i and descs[j] not in seen:
                picked.append(int(j))
                seen.add(descs[j])
            if len(picked) == n:
                break
        if len(picked) < n:
            raise ValueError(f"tool {catalog[i].name!r}: fewer than {n} other distinct descriptions in the catalog")
        out.append(picked)
    return out


def make_probes(catalog: Catalog, prefix: str = "demo") -> tuple[list[dict], list[dict]]:
    """(MCQ items, QA items) in the released probe formats, one of each per tool."""
    negs = hard_negatives(catalog)
    mcq, qa = [], []
    for i, (tool, neg) in enumerate(zip(catalog, negs)):
        mcq.append({"id": f"{prefix}-mcq-{i:04d}", "question": "What does this tool do?", "correct_answer": _desc(tool),
                    "wrong_answers": [_desc(catalog[j]) for j in neg], "tool": _record(tool), "made_by": MADE_BY})
        yes = i % 2 == 0
        desc = _desc(tool) if yes else _desc(catalog[neg[0]])
        qa.append({"id": f"{prefix}-qa-{i:04d}", "question": QA_TEMPLATE.format(desc=desc), "answer": "Yes" if yes else "No",
                   "tool": _record(tool), "made_by": MADE_BY})
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
