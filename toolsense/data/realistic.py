"""Realistic-style Stage-2 training queries written by templates from any catalog (``stage2=realistic_template``).

App. E of the paper trains TG on *realistic* queries (short, goal-oriented, in a user's words, not
the API's) with the same tool coverage as the verbose Stage-2 data, and shows that realistic
recall recovers. The paper's App. E queries were written by an LLM; no LLM writer of that quality
runs offline here, so this module writes a seeded, deterministic stand-in from each tool's own
description:

* the **goal** is the first sentence of the API description (else the service's), turned into a
  verb clause (``data/verbose.py: clause``) with API wording removed: "this endpoint returns …"
  becomes "get …"; the API's name, identifier-like tokens (``getFileComments``, ``/api/Customer``,
  ``plate_number``) and the words api / endpoint / parameter / json are dropped; the goal is cut
  to :data:`MAX_GOAL_WORDS` words;
* it is framed by a short user template ("How can I …?", "I'm trying to …") and, for one of the
  two queries, a situation opener ("For a side project, …"); templates never name an API, a
  service's endpoint, or a parameter;
* :data:`PER_TOOL` (2) queries per tool from two different templates, for **every** tool of the
  catalog: the coverage of ``stage2=verbose``'s training split, which TG trains on.

It reads the catalog only: no benchmark item is ever an input, so it cannot copy an RRB test
query; train.py's leakage refusal still compares every query with the run's evaluation suite, and
``tests/data/test_realistic.py`` checks the released RRB items against the study catalog's queries
(no equal text, no near-copy).

**What it is not:** an LLM's realistic queries. A goal here is still the description's own
words, so these queries share more vocabulary with the tool text than the paper's realistic
queries (or the RRB's) do, and there is one goal per tool rather than a multi-step need spread
over several tools. Read App. E results trained on them as "realistic-style template queries".

    python -m toolsense.data.realistic <catalog.jsonl> [--out FILE] [--seed 0] [--force]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path
from typing import Iterable, Optional

from toolsense.catalog import Query, Tool, load_query_jsonl
from toolsense.catalog.tool import fold_text
from toolsense.data.verbose import clause, query_file, write_query_file

PER_TOOL = 2
SEED = 0
MAX_GOAL_WORDS = 14
TEMPLATES: tuple[str, ...] = (
    "How can I {goal}?",
    "I'm trying to {goal}.",
    "I need to {goal}. What can help?",
    "Is there a quick way to {goal}?",
    "Help me {goal}.",
    "I want to {goal}.",
    "Could you {goal} for me?",
    "What's the easiest way to {goal}?",
)
OPENERS: tuple[str, ...] = ("For a side project, ", "At work, ", "For my small business, ", "Quick question: ",
                            "For a school assignment, ", "Before a meeting, ")
BANNED = frozenset({"api", "apis", "endpoint", "endpoints", "parameter", "parameters", "param", "params", "json", "url",
                    "query", "request", "response", "http", "https", "rest", "payload", "jwt", "id", "ids"})
"""Words of API documentation that a user stating a goal would not write; dropped from goals."""
_ENDPOINT_LEAD = re.compile(r"^(?:(?:this|the|an?|our)\s+)?(?:api|endpoint|tool|service|function|method|call|route|"
                            r"operation)\s+(?:will\s+|can\s+|is\s+used\s+to\s+|lets\s+you\s+|allows\s+you\s+to\s+|helps\s+you\s+)?",
                            re.I)
_LEADS = {"return": "get", "returns": "get", "retrieve": "get", "fetch": "get", "provide": "get", "provides": "get",
          "list": "list", "gives": "get", "give": "get", "you": "", "allow": "", "users": ""}
_VERBS = frozenset({"get", "find", "search", "list", "check", "convert", "create", "send", "generate", "look", "extract",
                    "translate", "calculate", "validate", "verify", "track", "download", "upload", "update", "delete",
                    "add", "remove", "compare", "analyze", "analyse", "detect", "shorten", "scan", "lookup", "look up",
                    "see", "show", "book", "buy", "post", "read", "watch", "play", "predict", "estimate", "identify",
                    "resize", "format", "parse", "summarize", "recognize", "classify", "monitor", "schedule", "cancel"})
_IDENTIFIER = re.compile(r"^[/#@]|[/_{}=<>]|[a-z][A-Z]|^\W+$")


def _strip_name(text: str, name: str) -> str:
    if len(name) >= 4:
        text = re.sub(re.escape(name), " ", text, flags=re.I)
    return " ".join(text.split())


def _base_verb(word: str) -> str:
    """"minimizes" -> "minimize", "adds" -> "add" (a description's third person), else ``word``."""
    low = word.lower()
    for cut in ("es", "s"):
        if low.endswith(cut) and low[:-len(cut)] in _VERBS:
            return low[:-len(cut)]
    if low.endswith(("izes", "ises", "ates")):
        return low[:-1]
    return word


def _clean(text: str, api_name: str) -> list[str]:
    text = _strip_name(_ENDPOINT_LEAD.sub("", text), api_name)
    words = [w for w in text.split() if not _IDENTIFIER.search(w) and fold_text(w).strip(".,:;()") not in BANNED]
    while words and words[0].lower() in _LEADS:
        lead = _LEADS[words.pop(0).lower()]
        if lead:
            words.insert(0, lead)
            break
    words = words[:MAX_GOAL_WORDS]
    while words and fold_text(words[-1]).strip(".,:;-") in {"", "a", "an", "the", "of", "for", "to", "and", "or", "with", "in",
                                                               "on", "by", "from"}:
        words.pop()
    return words


def _as_goal(words: list[str]) -> str:
    words = list(words)
    base = _base_verb(words[0])
    verb = base != words[0] or base.lower() in _VERBS
    words[0] = base
    if not verb:
        if not words[0].isupper():
            words[0] = words[0].lower()
        words.insert(0, "get" if words[0] in {"all", "latest", "current", "list", "today's", "live"} else "find")
    words[0] = words[0].lower()
    return " ".join(words)


def _title_words(title: str) -> list[str]:
    """An API title as plain words ("getVideosUploadedByUser" -> get videos uploaded by user)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", re.sub(r"[/_\-{}]+", " ", title or ""))
    return [w.lower() for w in spaced.split() if fold_text(w) not in BANNED and w.isascii() and w.isalpha()]


def goal(tool: Tool) -> str:
    """The tool's goal as a short verb clause without API wording: from the API description, else
    the service description, else (documentation with nothing usable, about 7% of the release
    catalog) the API title's plain words, else its category; "" only when all are empty."""
    api_name = tool.api_title or tool.api
    for source in (tool.api_description, tool.tool_description):
        words = _clean(clause(source or ""), api_name)
        if len(words) >= 3:
            return _as_goal(words)
    words = _title_words(api_name) or _title_words(tool.tool_title or tool.service)
    if words:
        return _as_goal(words)
    category = (tool.category or "").strip().lower()
    return f"find something for {category} tasks" if category else ""


def tool_queries(tool: Tool, seed: int = SEED) -> list[str]:
    """:data:`PER_TOOL` queries for ``tool`` from distinct templates (the second with an opener);
    [] when the tool's documentation yields no goal."""
    g = goal(tool)
    if not g:
        return []
    rng = random.Random(f"{seed}:realistic:{tool.name}")
    out = []
    for i, template in enumerate(rng.sample(TEMPLATES, PER_TOOL)):
        text = template.format(goal=g)
        if i == 1:
            text = rng.choice(OPENERS) + (text if text.startswith("I") and text[1:2] in (" ", "'") else text[0].lower() + text[1:])
        out.append(" ".join(text.split()))
    return out


def generate(tools: Iterable[Tool], seed: int = SEED) -> list[Query]:
    """Every tool's queries (split ``train``, style ``short``) in a seeded order."""
    qs = [Query(f"realistic-train-{j}:{t.name}", text, (t.name,), "short", "train")
          for t in tools for j, text in enumerate(tool_queries(t, seed))]
    random.Random(f"{seed}:order:realistic").shuffle(qs)
    return qs


def default_output(catalog_path: Optional[str | Path], seed: int = SEED) -> Path:
    """``$TOOLSENSE_CACHE/realistic/<catalog stem>.jsonl`` (``demo`` for the demo catalog)."""
    return query_file("realistic", catalog_path, seed)


def ensure_written(catalog_path: Optional[str | Path], out: Optional[str | Path] = None, seed: int = SEED,
                   force: bool = False) -> Path:
    """The query file of ``catalog_path`` (None = the demo catalog), written atomically if missing."""
    return write_query_file("realistic", generate, catalog_path, out, seed, force)


def load_realistic(catalog_path: Optional[str | Path]) -> list[Query]:
    return load_query_jsonl(ensure_written(catalog_path), split="train")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolsense.data.realistic", description=__doc__.splitlines()[0])
    ap.add_argument("catalog", help="catalog file (ToolSense JSONL, ...); 'demo' for the demo catalog")
    ap.add_argument("--out", default=None, help="output JSONL (default: $TOOLSENSE_CACHE/realistic/<catalog stem>.jsonl)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--force", action="store_true", help="rewrite even if the output exists")
    args = ap.parse_args(argv)
    out = ensure_written(None if args.catalog == "demo" else args.catalog, args.out, args.seed, args.force)
    qs = load_query_jsonl(out)
    print(f"{out}: {len(qs)} queries, {len({t for q in qs for t in q.tools})} tools")
    return 0


if __name__ == "__main__":
    sys.exit(main())
