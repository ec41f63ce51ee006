"""Verbose, ToolBench-style queries written from any catalog's documentation (``stage2=verbose``).

ToolBench's training and test queries were written by an LLM from the API documentation, so they
repeat the API's name, its service and the words of its description: the paper's point is that
such queries let a retriever match surface words. This generator writes queries of that style
without an LLM: templates over a tool's service, API name, first description sentence and
parameter names, filled deterministically (``random.Random(f"{seed}:{split}:{tool name}")``, so a
tool's queries do not change when other tools are added).

Three disjoint template sets (no template, opener or parameter phrase shared):

=========  ============  =========================================================
``train``  2 per tool    Stage-2 training pairs (two different templates)
``dev``    1 per tool    a held-out split for pilots and tuning
``test``   1 per tool    the held-out "standard" benchmark (``benchmark=verbose_heldout``)
=========  ============  =========================================================

Held-out queries are therefore the same style on other wordings, never a training text (a
held-out text that folds to a training text is dropped; none does with these templates). The
whole set is one JSONL file ``{query_id, query, tools, style, split}`` (our query format), cached
at ``$TOOLSENSE_CACHE/verbose/<catalog stem>.jsonl`` and written on first use; training reads its
``train`` split and benchmarks read ``dev`` / ``test`` from the same bytes.

    python -m toolsense.data.verbose <catalog.jsonl> [--out FILE] [--seed 0] [--force]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Callable, Iterable, Optional

from toolsense.catalog import Query, Tool, load_catalog, load_demo_catalog, load_query_jsonl
from toolsense.catalog.tool import fold_text
from toolsense.utils.paths import atomic_write_text, cache_root

SPLITS = ("train", "dev", "test")
PER_TOOL = {"train": 2, "dev": 1, "test": 1}
SEED = 0
MAX_WORDS = 24
"""Descriptions are cut to their first sentence and at most this many words."""

TEMPLATES: dict[str, tuple[str, ...]] = {
    "train": (
        "I'm working on a project and need to {desc}. Could you call the {api} API of {service} for me{params}?",
        "Please use {service}'s {api} endpoint to {desc}{params}.",
        "My team wants to {desc}. Which {service} API does that? Run {api}{params}.",
        "Can you help me {desc}? I heard {service} ({sdesc}) has an API called {api}{params}.",
        "I need the {api} function from {service} so that I can {desc}{params}. Thanks!",
        "For my app I have to {desc}. Please fetch it via {service} {api}{params}.",
    ),
    "dev": (
        "Hey, could you {desc} using {api} on {service}{params}?",
        "I'd like to {desc}. The {service} service ({sdesc}) should handle it with {api}{params}.",
        "Is there a way to {desc}? Try the {api} call of {service}{params}.",
    ),
    "test": (
        "We are building something and must {desc}; get this done through {service}'s {api}{params}.",
        "Find me the API that can {desc}, something like {api} from {service}{params}.",
        "Help me {desc}. I want to rely on {service} and its {api} operation{params}.",
        "Our goal is to {desc}. Please invoke {api} ({service}, {sdesc}){params}.",
    ),
}
PARAM_PHRASES: dict[str, tuple[str, ...]] = {
    "train": (" with the {names} parameters", " and set {names}"),
    "dev": (", passing {names}",),
    "test": (", giving it {names}", " (inputs: {names})"),
}
_THIRD_PERSON = {"returns": "return", "gets": "get", "provides": "provide", "lists": "list", "fetches": "fetch",
                 "retrieves": "retrieve", "generates": "generate", "creates": "create", "converts": "convert",
                 "searches": "search", "sends": "send", "checks": "check", "gives": "give", "shows": "show",
                 "finds": "find", "extracts": "extract", "allows": "allow", "displays": "display"}
_MARKUP = re.compile(r"\*\*|__|`|#+|\[|\]\([^)]*\)|<[^>]+>|https?://\S+")


def clause(text: str) -> str:
    """The first sentence of ``text`` as a lower-case verb clause ("Returns the list." -> "return
    the list"), markup and URLs removed, cut at :data:`MAX_WORDS` words; "" when nothing is left."""
    text = " ".join(_MARKUP.sub(" ", text or "").split())
    text = re.split(r"(?<=[.!?])\s|\n", text, maxsplit=1)[0].rstrip(" .!?:;,")
    words = text.split()[:MAX_WORDS]
    while words and " ".join(words).count("(") > " ".join(words).count(")"):
        words = " ".join(words).rsplit("(", 1)[0].split()
    if not words or fold_text(" ".join(words)) in ("none", "null", "n/a", "-"):
        return ""
    first = words[0].lower() if not words[0].isupper() else words[0]
    words[0] = _THIRD_PERSON.get(first, first)
    return " ".join(words)


def _fields(tool: Tool, rng: random.Random, split: str) -> dict[str, str]:
    api = tool.api_title or tool.api
    desc = clause(tool.api_description) or clause(tool.tool_description) or f"use {api}"
    sdesc = clause(tool.tool_description) or (tool.category or "an API service")
    names = [p.name for p in tool.parameters][:3]
    params = ""
    if names:
        joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        params = rng.choice(PARAM_PHRASES[split]).format(names=joined)
    return {"service": tool.tool_title or tool.service, "api": api, "desc": desc, "sdesc": sdesc, "params": params}


def tool_queries(tool: Tool, split: str, seed: int = SEED) -> list[str]:
    """``PER_TOOL[split]`` queries for ``tool`` from distinct templates of ``split``."""
    rng = random.Random(f"{seed}:{split}:{tool.name}")
    templates = rng.sample(TEMPLATES[split], PER_TOOL[split])
    return [" ".join(t.format(**_fields(tool, rng, split)).split()) for t in templates]


def generate(tools: Iterable[Tool], seed: int = SEED) -> list[Query]:
    """Every split's queries for ``tools``, each split in a seeded order (a benchmark's ``limit``
    then keeps a random sample); held-out texts equal to a training text (folded) are dropped."""
    tools = list(tools)
    out: list[Query] = []
    train_texts: set[str] = set()
    for split in SPLITS:
        qs = [Query(f"verbose-{split}-{j}:{t.name}", text, (t.name,), "verbose", split)
              for t in tools for j, text in enumerate(tool_queries(t, split, seed))]
        if split == "train":
            train_texts = {fold_text(q.text) for q in qs}
        else:
            qs = [q for q in qs if fold_text(q.text) not in train_texts]
        random.Random(f"{seed}:order:{split}").shuffle(qs)
        out += qs
    return out


def to_jsonl(queries: Iterable[Query]) -> str:
    return "".join(json.dumps({"query_id": q.query_id, "query": q.text, "tools": list(q.tools), "style": q.style,
                               "split": q.split}, ensure_ascii=False) + "\n" for q in queries)


def query_file(kind: str, catalog_path: Optional[str | Path], seed: int = SEED) -> Path:
    """``$TOOLSENSE_CACHE/<kind>/<catalog stem>.jsonl`` (``demo`` for the demo catalog;
    ``<stem>.seed<N>.jsonl`` for a seed other than :data:`SEED`): where a template generator's
    queries (``verbose`` here, ``realistic`` in realistic.py) are cached."""
    stem = "demo" if catalog_path is None else Path(catalog_path).name.split(".")[0]
    return cache_root() / kind / (f"{stem}.jsonl" if seed == SEED else f"{stem}.seed{seed}.jsonl")


def write_query_file(kind: str, make: Callable[[Iterable[Tool], int], list[Query]], catalog_path: Optional[str | Path],
                     out: Optional[str | Path] = None, seed: int = SEED, force: bool = False) -> Path:
    """The ``kind`` query file of ``catalog_path`` (None = the demo catalog), ``make(tools, seed)``
    written atomically if missing (or ``force``); a missing catalog file is an error naming it and
    the field that gave it."""
    out = Path(out) if out else query_file(kind, catalog_path, seed)
    if out.is_file() and not force:
        return out
    if catalog_path is not None and not Path(catalog_path).is_file():
        raise FileNotFoundError(f"stage2.sources: {kind} queries need the catalog file {catalog_path} "
                                "(the source's path, normally ${catalog.path}); build the catalog first")
    catalog = load_demo_catalog() if catalog_path is None else load_catalog(catalog_path)
    atomic_write_text(out, to_jsonl(make(catalog, seed)))
    return out


def default_output(catalog_path: Optional[str | Path], seed: int = SEED) -> Path:
    return query_file("verbose", catalog_path, seed)


def ensure_written(catalog_path: Optional[str | Path], out: Optional[str | Path] = None, seed: int = SEED,
                   force: bool = False) -> Path:
    return write_query_file("verbose", generate, catalog_path, out, seed, force)


def load_verbose(catalog_path: Optional[str | Path], split: Optional[str]) -> list[Query]:
    """The ``split`` queries (None: all) of ``catalog_path``'s verbose query file."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"stage2.sources.split={split!r}: a verbose source has splits {list(SPLITS)} (or null)")
    return load_query_jsonl(ensure_written(catalog_path), split=split)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolsense.data.verbose", description=__doc__.splitlines()[0])
    ap.add_argument("catalog", help="catalog file (ToolSense JSONL, ...); 'demo' for the demo catalog")
    ap.add_argument("--out", default=None, help="output JSONL (default: $TOOLSENSE_CACHE/verbose/<catalog stem>.jsonl)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--force", action="store_true", help="rewrite even if the output exists")
    args = ap.parse_args(argv)
    out = ensure_written(None if args.catalog == "demo" else args.catalog, args.out, args.seed, args.force)
    counts = {s: 0 for s in SPLITS}
    for q in load_query_jsonl(out):
        counts[q.split] += 1
    print(f"{out}: " + ", ".join(f"{s} {n}" for s, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
