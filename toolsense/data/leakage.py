"""Leakage between Stage-2 training queries and the queries a run will be scored on.

A model that trained on a test query scores that query from memory: a table built on it says
nothing about retrieval. Two queries are the same when they have the same normalised text
(lower case, accents folded, punctuation dropped, single spaces), or the same id *within one
file* (a file's ids name its items; equal ids across unrelated files mean nothing, and ToolBench's
pooled benchmarks rename theirs ``<file stem>/<id>``, where the text still matches).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from toolsense.catalog import Query
from toolsense.utils.errors import UserError

_WORD = re.compile(r"\w+")


def normalise_query(text: str) -> str:
    """The form two queries are compared in: NFKD accents dropped, lower case, words only."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return " ".join(_WORD.findall(folded.lower()))


@dataclass(frozen=True)
class QuerySet:
    """Queries and the files they were read from, under a name for messages
    (``stage2.sources.0``, ``benchmarks.G1``)."""

    name: str
    files: tuple[str, ...]
    queries: Sequence[Query]


@dataclass(frozen=True)
class Overlap:
    train: str
    train_files: tuple[str, ...]
    test: str
    test_files: tuple[str, ...]
    count: int
    """Distinct test queries that also occur in training (by id or text)."""
    example: str

    def describe(self) -> str:
        return (f"{self.train} ({', '.join(self.train_files)}) shares {self.count} queries with {self.test} "
                f"({', '.join(self.test_files)}), e.g. {self.example[:80]!r}")


def _same_file(a: Sequence[str], b: Sequence[str]) -> bool:
    return bool({str(Path(p).resolve()) for p in a} & {str(Path(p).resolve()) for p in b})


def overlap(train: QuerySet, test: QuerySet) -> Overlap | None:
    """The test queries of ``test`` that ``train`` holds (normalised text, or id where both were
    read from one file); None when there are none."""
    texts = {normalise_query(q.text) for q in train.queries}
    ids = {q.query_id for q in train.queries} if _same_file(train.files, test.files) else set()
    shared = [q for q in test.queries if q.query_id in ids or normalise_query(q.text) in texts]
    if not shared:
        return None
    count = len({(q.query_id, normalise_query(q.text)) for q in shared})
    return Overlap(train.name, train.files, test.name, test.files, count, shared[0].text)


def refuse_leakage(train_sets: Sequence[QuerySet], test_sets: Sequence[QuerySet]) -> None:
    """Raise ValueError naming every (training source, benchmark) pair that shares queries,
    with the files and the count; return quietly when none does."""
    found = [o for tr in train_sets for te in test_sets if (o := overlap(tr, te)) is not None]
    if found:
        raise UserError("Stage 2 would train on queries the run is evaluated on: " + "; ".join(o.describe() for o in found)
                        + ". Train on a split disjoint from the evaluation suite (stage2.sources.N.split=train, or "
                           "a training file of your own), or evaluate on other benchmarks")
