"""How often real ToolBench queries name their answer: the rates the verbose generator imitates.

ToolBench's test queries were written by an LLM from the API documentation, but they do not all
spell out the answer: a template that names the API and the service in every query (our first
verbose generator did, 249 of 250) lets BM25 score 100%. This module measures, per (query, gold
API) pair of ToolBench's G1 test files, how often the query names the API, the service (ToolBench's
"tool"), both or neither, how often it names one of the API's parameters, and how much of the API
description's content words it reuses; data/verbose.py draws its queries at these rates.

A name *appears* when its folded form (lower case, runs of non-alphanumerics made one space) is a
whole-word run of the folded query ("Transfermarkt search" in "... the transfermarkt search api
..."; "getWeather" is not in "get weather"). Measured on StableToolBench's 474 solvable G1 queries
(1,057 pairs, 966 with a described API in ``api_list``):

    python -m toolsense.data.naming [../shared/data/toolbench_queries]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from toolsense.utils.errors import DataError

G1_FILES = ("G1_instruction.json", "G1_category.json", "G1_tool.json")
_STOP = frozenset("a an the of to for and or in on with by from is are be this that it its as at api get returns return "
                  "use using your you can will all any".split())


def folded(text: str) -> str:
    """``text`` lower-cased, every run of non-alphanumerics one space, padded with a space each side."""
    return " " + " ".join(re.sub(r"[^a-z0-9]+", " ", (text or "").lower()).split()) + " "


def names(query: str, name: str) -> bool:
    """Whether ``name`` appears in ``query`` as a run of whole folded words (see the module doc)."""
    key = folded(name)
    return key.strip() != "" and key in folded(query)


def content_words(text: str) -> set[str]:
    """Lower-case words of 3+ characters that are not function words (the description's content)."""
    return {w for w in re.findall(r"[a-z0-9]+", (text or "").lower()) if len(w) > 2 and w not in _STOP}


def naming_shares(pairs: Iterable[tuple[str, Any]]) -> tuple[float, float]:
    """Shares of (query text, gold Tool) pairs whose query names the API and the service."""
    pairs = list(pairs)
    n = max(len(pairs), 1)
    return (sum(names(x, t.api_title or t.api) for x, t in pairs) / n,
            sum(names(x, t.tool_title or t.service) for x, t in pairs) / n)


@dataclass(frozen=True)
class NamingRates:
    """Shares of (query, gold API) pairs; ``both + api_only + service_only + neither == 1``."""

    both: float
    """the query names the API and the service"""
    api_only: float
    service_only: float
    neither: float
    params: float
    """of pairs whose API has parameters: the query names at least one of them"""
    desc_overlap: float
    """of pairs whose API has a description: mean share of its content words the query contains"""
    pairs: int
    queries: int
    query_api: float
    """share of queries that name at least one of their gold APIs (a query has 1-5)"""
    query_service: float
    source: str

    @property
    def api(self) -> float:
        return self.both + self.api_only

    @property
    def service(self) -> float:
        return self.both + self.service_only

    def text(self) -> str:
        return (f"API named {100 * self.api:.1f}%, service {100 * self.service:.1f}% (both {100 * self.both:.1f}%, "
                f"neither {100 * self.neither:.1f}%), a parameter {100 * self.params:.1f}%, description words reused "
                f"{100 * self.desc_overlap:.1f}% ({self.pairs} pairs; per query: an API named {100 * self.query_api:.1f}%, "
                f"a service {100 * self.query_service:.1f}% of {self.queries}; {self.source})")


# Measured by measure() on ../shared/data/toolbench_queries (tests/data/test_naming.py re-measures it and fails if it
# moves); the generator's default, so a machine without the data draws the same queries.
TOOLBENCH_G1 = NamingRates(both=0.0303, api_only=0.1599, service_only=0.0946, neither=0.7152, params=0.3333,
                           desc_overlap=0.4988, pairs=1057, queries=474, query_api=0.2869, query_service=0.1350,
                           source="ToolBench G1 test (StableToolBench's 474 solvable queries)")


def _pairs(paths: Sequence[Path]) -> Iterable[tuple[int, str, str, str, dict | None]]:
    """(query number, query, tool, API, the API's documentation or None) for every gold API of every query."""
    n = 0
    for path in paths:
        try:
            items = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: not a ToolBench query file (a JSON list of queries): {e}") from e
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "query" not in item or "relevant APIs" not in item:
                raise DataError(f"{path}: item {i} lacks 'query' or 'relevant APIs'")
            docs = {(a.get("tool_name"), a.get("api_name")): a for a in item.get("api_list", [])}
            for tool, api in item["relevant APIs"]:
                yield n, item["query"], tool, api, docs.get((tool, api))
            n += 1


def measure(paths: Sequence[str | Path], source: str = "") -> NamingRates:
    """The naming rates of the ToolBench query files ``paths`` (see the module doc)."""
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    with_params = named_params = 0
    overlaps: list[float] = []
    by_query: dict[int, list[bool]] = {}
    for qn, query, tool, api, doc in _pairs([Path(p) for p in paths]):
        key = (names(query, api), names(query, tool))
        counts[key] += 1
        hit = by_query.setdefault(qn, [False, False])
        hit[0], hit[1] = hit[0] or key[0], hit[1] or key[1]
        params = [p["name"] for p in (doc or {}).get("required_parameters", []) + (doc or {}).get("optional_parameters", [])]
        if params:
            with_params += 1
            named_params += any(names(query, p) for p in params if len(folded(p).strip()) > 2)
        desc = content_words((doc or {}).get("api_description") or "")
        if desc:
            overlaps.append(len(desc & content_words(query)) / len(desc))
    n = sum(counts.values())
    if not n:
        raise DataError(f"{', '.join(map(str, paths))}: no (query, relevant API) pair to measure")
    r = {k: round(v / n, 4) for k, v in counts.items()}
    return NamingRates(r[(True, True)], r[(True, False)], r[(False, True)], r[(False, False)],
                       round(named_params / max(with_params, 1), 4), round(sum(overlaps) / max(len(overlaps), 1), 4),
                       n, len(by_query), round(sum(h[0] for h in by_query.values()) / len(by_query), 4),
                       round(sum(h[1] for h in by_query.values()) / len(by_query), 4),
                       source or ", ".join(Path(p).name for p in paths))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolsense.data.naming", description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default="../shared/data/toolbench_queries")
    ap.add_argument("--files", nargs="*", default=list(G1_FILES))
    args = ap.parse_args(argv)
    rates = measure([Path(args.folder) / f for f in args.files])
    print(json.dumps(asdict(rates)))
    print(rates.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
