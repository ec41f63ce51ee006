"""Verbose, ToolBench-style queries written from any catalog's documentation (``stage2=verbose``).

ToolBench's training and test queries were written by an LLM from the API documentation, so they
reuse the words of its description and sometimes name the API or its service: the paper's point
is that such queries let a retriever match surface words. This generator writes queries of that
style without an LLM: templates over the API description's first sentence (cut to a part of it),
a reference to the tool and sometimes its parameter names, filled deterministically
(``random.Random(f"{seed}:{split}:{tool name}")``, so a tool's queries do not change when other
tools are added).

How often a query names the API, the service, both or neither, names a parameter, and how much of
the description it reuses are drawn at the rates measured on ToolBench's G1 test queries
(data/naming.py: API 19.0%, service 12.5% of (query, gold API) pairs; description words ~50%), in
every split alike. (Version 1 named both in every query; BM25 then scored 100%.)

Version 2 draws *how the query refers to its tool* at those rates, but a description often contains
the API's or the service's name ("Search products ..." for the API "Search"), so its queries name
the answer more often than drawn (on the replication's 1,200-tool catalog: API 34.1%, service
18.6%). Version 3 (``kind: verbose_v3``, ``--version 3``) calibrates the draw to the catalog: it
measures how often the description alone names the answer (:func:`calibrate`) and draws the
reference less often by as much, so that the *measured* shares equal ToolBench's (the association
of the two names kept). Its queries depend on the catalog's leakage rate, so a tool's queries can
change when many tools are added; version 2 (the registered studies' data) is unchanged.

Three disjoint template sets (no template, opener or parameter phrase shared):

=========  ============  =========================================================
``train``  2 per tool    Stage-2 training pairs (two different templates)
``dev``    1 per tool    a held-out split for pilots and tuning
``test``   1 per tool    the held-out "standard" benchmark (``benchmark=verbose_heldout``)
=========  ============  =========================================================

Held-out queries are therefore the same style on other wordings, never a training text (a
held-out text that folds to a training text is dropped; none does with these templates). The
whole set is one JSONL file ``{query_id, query, tools, style, split}`` (our query format), cached
at ``$TOOLSENSE_CACHE/verbose/<catalog stem>.v2.jsonl`` and written on first use; training reads its
``train`` split and benchmarks read ``dev`` / ``test`` from the same bytes (``.v3.jsonl`` for version 3).

    python -m toolsense.data.verbose <catalog.jsonl> [--version 2|3] [--out FILE] [--seed 0] [--force]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import random
import re
import sys
from pathlib import Path
from typing import Callable, Iterable, Optional

from toolsense.catalog import Query, Tool, load_catalog, load_demo_catalog, load_query_jsonl
from toolsense.catalog.tool import fold_text
from toolsense.data.naming import TOOLBENCH_G1, NamingRates, naming_shares
from toolsense.utils.errors import ConfigError, MissingFile
from toolsense.utils.paths import atomic_write_text, cache_root

log = logging.getLogger(__name__)
SPLITS = ("train", "dev", "test")
PER_TOOL = {"train": 2, "dev": 1, "test": 1}
SEED = 0
VERSION = ".v2"
"""Version 2 names the answer at ToolBench's rates (version 1, unversioned files, named it always)."""
VERSIONS = {2: VERSION, 3: ".v3"}
"""Generator version -> its cache file suffix (3: the draw calibrated to the catalog, :func:`calibrate`)."""
MAX_WORDS = 24
"""Descriptions are cut to their first sentence and at most this many words."""

TEMPLATES: dict[str, tuple[str, ...]] = {
    "train": (
        "I'm working on a project and need to {desc}. Could you call {ref} for me{params}?",
        "Please use {ref} to {desc}{params}.",
        "My team wants to {desc}. Run {ref}{params}.",
        "Can you help me {desc}? I heard {ref} can do it{params}.",
        "I need {ref} so that I can {desc}{params}. Thanks!",
        "For my app I have to {desc}. Please fetch it via {ref}{params}.",
    ),
    "dev": (
        "Hey, could you {desc} using {ref}{params}?",
        "I'd like to {desc}. {Ref} should handle it{params}.",
        "Is there a way to {desc}? Try {ref}{params}.",
    ),
    "test": (
        "We are building something and must {desc}; get this done through {ref}{params}.",
        "Find me what can {desc}, something like {ref}{params}.",
        "Help me {desc}. I want to rely on {ref}{params}.",
        "Our goal is to {desc}. Please invoke {ref}{params}.",
    ),
}
REFS: dict[str, tuple[str, ...]] = {
    "both": ("the {api} API of {service}", "{service}'s {api} endpoint", "{api} from {service}"),
    "api_only": ("the {api} API", "the {api} endpoint", "{api}"),
    "service_only": ("{service}", "the {service} service", "an API of {service}"),
    "neither": ("a suitable API", "the right tool", "an API that does this"),
}
"""How a query refers to its tool, by naming case (drawn at ``naming.TOOLBENCH_G1``'s rates)."""
PARAM_PHRASES: dict[str, tuple[str, ...]] = {
    "train": (" with the {names} parameters", " and set {names}"),
    "dev": (", passing {names}",),
    "test": (", giving it {names}", " (inputs: {names})"),
}
KEEP = (0.4, 0.9)
"""A description clause keeps a uniform share in this range of its words (at least 2), so that a query
reuses about half of the description's content words, as ToolBench's do (``naming.TOOLBENCH_G1.desc_overlap``)."""
_DANGLING = frozenset("a an the of to for and or in on with by from as at into via its their your this that which "
                      "who whose".split())
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


def _cut(desc: str, rng: random.Random, keep: tuple[float, float] = KEEP) -> str:
    """The first ``keep`` share (uniform in that range) of ``desc``'s words, no function word left dangling at the end."""
    words = desc.split()
    n = max(2, round(len(words) * rng.uniform(*keep)))
    words = words[:n]
    while len(words) > 2 and words[-1].lower() in _DANGLING:
        words.pop()
    return " ".join(words).rstrip(",;:(")


def naming_case(rng: random.Random, rates: NamingRates) -> str:
    """``both`` / ``api_only`` / ``service_only`` / ``neither``, drawn at ``rates``."""
    u = rng.random()
    for case in ("both", "api_only", "service_only"):
        u -= getattr(rates, case)
        if u < 0:
            return case
    return "neither"


def _fields(tool: Tool, rng: random.Random, split: str, rates: NamingRates, keep: tuple[float, float]) -> dict[str, str]:
    api = tool.api_title or tool.api
    desc = clause(tool.api_description) or clause(tool.tool_description) or f"use {api}"
    service = tool.tool_title or tool.service
    ref = rng.choice(REFS[naming_case(rng, rates)]).format(api=api, service=service)
    names = [p.name for p in tool.parameters][:3]
    params = ""
    if names and rng.random() < rates.params:
        joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        params = rng.choice(PARAM_PHRASES[split]).format(names=joined)
    return {"ref": ref, "Ref": ref[:1].upper() + ref[1:], "desc": _cut(desc, rng, keep), "params": params}


def tool_queries(tool: Tool, split: str, seed: int = SEED, rates: NamingRates = TOOLBENCH_G1,
                 keep: tuple[float, float] = KEEP) -> list[str]:
    """``PER_TOOL[split]`` queries for ``tool`` from distinct templates of ``split``, each naming the
    API and the service at ``rates`` (independently per query)."""
    rng = random.Random(f"{seed}:{split}:{tool.name}")
    templates = rng.sample(TEMPLATES[split], PER_TOOL[split])
    return [" ".join(t.format(**_fields(tool, rng, split, rates, keep)).split()) for t in templates]


def generate(tools: Iterable[Tool], seed: int = SEED, rates: NamingRates = TOOLBENCH_G1,
             keep: tuple[float, float] = KEEP) -> list[Query]:
    """Every split's queries for ``tools``, each split in a seeded order (a benchmark's ``limit``
    then keeps a random sample); held-out texts equal to a training text (folded) are dropped.
    ``rates`` / ``keep``: other naming rates or description shares (ablations; the cached file uses the defaults)."""
    tools = list(tools)
    out: list[Query] = []
    train_texts: set[str] = set()
    for split in SPLITS:
        qs = [Query(f"verbose-{split}-{j}:{t.name}", text, (t.name,), "verbose", split)
              for t in tools for j, text in enumerate(tool_queries(t, split, seed, rates, keep))]
        if split == "train":
            train_texts = {fold_text(q.text) for q in qs}
        else:
            qs = [q for q in qs if fold_text(q.text) not in train_texts]
        random.Random(f"{seed}:order:{split}").shuffle(qs)
        out += qs
    return out


def calibrate(tools: Iterable[Tool], seed: int = SEED, target: NamingRates = TOOLBENCH_G1, keep: tuple[float, float] = KEEP,
              rounds: int = 3) -> NamingRates:
    """The rates to draw at so that ``generate(tools, seed, rates)``'s queries, all splits together,
    *measure* (data/naming.py) ``target``'s API and service shares. A query names a name when drawn
    to, or else through its description with the catalog's leakage L = (measured − drawn) / (1 −
    drawn); the draw becomes (target − L) / (1 − L) (0 when the description alone names it more
    often than the target), re-measured ``rounds`` times. ``both`` keeps the target's association
    both / (api · service); ``source`` says what was calibrated to."""
    tools = list(tools)
    by = {t.name: t for t in tools}
    want = (target.api, target.service)
    assoc = target.both / max(target.api * target.service, 1e-9)
    rates, drawn = target, want
    for _ in range(rounds):
        qs = generate(tools, seed, rates, keep)
        measured = naming_shares((q.text, by[q.tools[0]]) for q in qs)
        leak = [max(0.0, (m - d) / max(1 - d, 1e-9)) for m, d in zip(measured, drawn)]
        drawn = tuple(min(1.0, max(0.0, (w - x) / max(1 - x, 1e-9))) for w, x in zip(want, leak))
        both = min(drawn[0] * drawn[1] * assoc, *drawn)
        rates = dataclasses.replace(target, both=both, api_only=drawn[0] - both, service_only=drawn[1] - both,
                                    neither=1 - drawn[0] - drawn[1] + both,
                                    source=f"calibrated to {target.source} (drawn API {drawn[0]:.3f}, service {drawn[1]:.3f})")
    for what, x, w in zip(("API", "service"), leak, want):
        if x > w:
            log.warning("verbose v3: the descriptions alone name the %s in %.1f%% of queries, above ToolBench's %.1f%%; "
                        "it is never named otherwise, and the queries measure the higher share", what, 100 * x, 100 * w)
    return rates


def generate_v3(tools: Iterable[Tool], seed: int = SEED) -> list[Query]:
    """Version 3: :func:`generate` at the rates :func:`calibrate` finds for ``tools``."""
    tools = list(tools)
    return generate(tools, seed, calibrate(tools, seed))


def to_jsonl(queries: Iterable[Query]) -> str:
    return "".join(json.dumps({"query_id": q.query_id, "query": q.text, "tools": list(q.tools), "style": q.style,
                               "split": q.split}, ensure_ascii=False) + "\n" for q in queries)


def query_file(kind: str, catalog_path: Optional[str | Path], seed: int = SEED, version: str = "") -> Path:
    """``$TOOLSENSE_CACHE/<kind>/<catalog stem><version>.jsonl`` (``demo`` for the demo catalog;
    ``<stem><version>.seed<N>.jsonl`` for a seed other than :data:`SEED`): where a template
    generator's queries (``verbose`` here, ``realistic`` in realistic.py) are cached. A generator
    whose output changes gets a new ``version``, so a cached file of the old one is never read as it."""
    stem = ("demo" if catalog_path is None else Path(catalog_path).name.split(".")[0]) + version
    return cache_root() / kind / (f"{stem}.jsonl" if seed == SEED else f"{stem}.seed{seed}.jsonl")


def write_query_file(kind: str, make: Callable[[Iterable[Tool], int], list[Query]], catalog_path: Optional[str | Path],
                     out: Optional[str | Path] = None, seed: int = SEED, force: bool = False, version: str = "") -> Path:
    """The ``kind`` query file of ``catalog_path`` (None = the demo catalog; ``version``: the cache
    file's suffix), ``make(tools, seed)`` written atomically if missing (or ``force``); a missing
    catalog file is an error naming it and the field that gave it."""
    out = Path(out) if out else query_file(kind, catalog_path, seed, version)
    if out.is_file() and not force:
        return out
    if catalog_path is not None and not Path(catalog_path).is_file():
        raise MissingFile(f"stage2.sources: {kind} queries need the catalog file {catalog_path} "
                                "(the source's path, normally ${catalog.path}); build the catalog first")
    catalog = load_demo_catalog() if catalog_path is None else load_catalog(catalog_path)
    atomic_write_text(out, to_jsonl(make(catalog, seed)))
    return out


def _version(version: int) -> str:
    if version not in VERSIONS:
        raise ValueError(f"verbose generator version {version!r}: choose from {sorted(VERSIONS)}")
    return VERSIONS[version]


def default_output(catalog_path: Optional[str | Path], seed: int = SEED, version: int = 2) -> Path:
    return query_file("verbose", catalog_path, seed, _version(version))


def ensure_written(catalog_path: Optional[str | Path], out: Optional[str | Path] = None, seed: int = SEED,
                   force: bool = False, version: int = 2) -> Path:
    suffix = _version(version)
    return write_query_file("verbose", generate_v3 if version == 3 else generate, catalog_path, out, seed, force, suffix)


def load_verbose(catalog_path: Optional[str | Path], split: Optional[str], version: int = 2) -> list[Query]:
    """The ``split`` queries (None: all) of ``catalog_path``'s verbose query file of generator ``version``."""
    if split is not None and split not in SPLITS:
        raise ConfigError(f"stage2.sources.split={split!r}: a verbose source has splits {list(SPLITS)} (or null)")
    return load_query_jsonl(ensure_written(catalog_path, version=version), split=split)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolsense.data.verbose", description=__doc__.splitlines()[0])
    ap.add_argument("catalog", help="catalog file (ToolSense JSONL, ...); 'demo' for the demo catalog")
    ap.add_argument("--version", type=int, default=2, choices=sorted(VERSIONS),
                    help="2: drawn at ToolBench's rates; 3: calibrated so the queries measure them")
    ap.add_argument("--out", default=None, help="output JSONL (default: $TOOLSENSE_CACHE/verbose/<catalog stem>.v<N>.jsonl)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--force", action="store_true", help="rewrite even if the output exists")
    args = ap.parse_args(argv)
    catalog_path = None if args.catalog == "demo" else args.catalog
    out = ensure_written(catalog_path, args.out, args.seed, args.force, args.version)
    queries = load_query_jsonl(out)
    counts = {s: sum(q.split == s for q in queries) for s in SPLITS}
    print(f"{out}: " + ", ".join(f"{s} {n}" for s, n in counts.items()))
    by = {t.name: t for t in (load_demo_catalog() if catalog_path is None else load_catalog(catalog_path))}
    api, svc = naming_shares((q.text, by[t]) for q in queries for t in q.tools if t in by)
    print(f"names the API in {100 * api:.1f}% and the service in {100 * svc:.1f}% of (query, gold) pairs "
          f"(ToolBench G1: {100 * TOOLBENCH_G1.api:.1f}% and {100 * TOOLBENCH_G1.service:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
