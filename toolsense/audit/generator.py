"""Synthetic five-tool traces for a binary task with a planted shortcut.

The task: "will the nightly build of project P pass?". The label is random. One tool
(``list_files`` by default) lists an output file whose name carries a build identifier
``XX-12``; with probability ``strength`` its prefix is the label's (KT for 1, PL for 0),
otherwise the other one - so the identifier predicts the label in every partition. The other
tools carry label-independent text: times of day, the project name, and identifiers of both
prefixes in the same file-name form but lower case (``report_kt-37.csv``). TF-IDF lower-cases,
so over the whole trace it cannot tell them from the planted one and sees the shortcut diluted,
while the planted tool alone reveals it. A language model does see case, so only the planted
identifier is upper case in its prompt.
``duplicate_in`` copies the identifier into a second tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from toolsense.audit.traces import ToolResult, TraceRecord, TraceSet, save_traces
from toolsense.utils.config import Seed

TOOLS = ["search_docs", "list_files", "run_tests", "query_db", "fetch_logs"]
PREFIX = {1: "KT", 0: "PL"}
PROJECTS = ["atlas", "borealis", "cedar", "dynamo", "ember", "fjord", "granite", "helix", "ion", "juniper"]
WORDS = ("the build uses a cache for artifacts and the config loader reads defaults from the "
         "environment while the scheduler retries failed jobs with backoff and the parser keeps "
         "comments; migration notes mention deprecated flags, a new linter rule and faster startup").split()
LOG_EVENTS = ["cache warmed", "lock released", "worker idle", "retry scheduled", "queue drained", "token refreshed"]


@dataclass
class GeneratorConfig:
    n_fit: int = 96
    """Records in the fit partition (cluster 0)."""
    n_eval_per_cluster: int = 16
    """Records in each evaluation cluster."""
    n_eval_clusters: int = 5
    """Evaluation clusters 1..n."""
    strength: float = 0.9
    """P(the planted identifier's prefix matches the label); 0.5 = no shortcut."""
    planted_tool: str = "list_files"
    duplicate_in: Optional[str] = None
    """Also write the planted identifier into this tool's output (e.g. fetch_logs)."""
    noise_ids: int = 1
    """Label-independent identifiers each other tool mentions."""
    seed: Seed = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.strength <= 1.0:
            raise ValueError(f"generator.strength must be in [0, 1], got {self.strength}")
        for name in ("planted_tool", "duplicate_in"):
            val = getattr(self, name)
            if val is not None and val not in TOOLS:
                raise ValueError(f"generator.{name}={val!r} is not one of {TOOLS}")
        if self.duplicate_in == self.planted_tool:
            raise ValueError("generator.duplicate_in must differ from generator.planted_tool")


def _code(rng: np.random.Generator, prefix: str | None = None) -> str:
    return f"{prefix or rng.choice(list(PREFIX.values()))}-{rng.integers(10, 100)}"


def _file(code: str) -> str:
    return f"report_{code}.csv"


def _time(rng: np.random.Generator) -> str:
    return f"{rng.integers(0, 24):02d}:{rng.integers(0, 60):02d}"


def _noise_text(tool: str, rng: np.random.Generator, project: str, n_ids: int) -> str:
    ids = [_file(_code(rng).lower()) for _ in range(n_ids)]
    if tool == "search_docs":
        return f"guide {project}: {' '.join(rng.choice(WORDS, size=int(rng.integers(3, 6))))}; see {' '.join(ids)}"
    if tool == "list_files":
        return f"src/{project}.py; {' '.join(ids) or 'cache.bin'}; notes.txt"
    if tool == "run_tests":
        n = int(rng.integers(20, 90))
        return f"{n} tests, {n - int(rng.integers(0, 4))} passed at {_time(rng)}; {' '.join(ids)}"
    if tool == "query_db":
        return f"rows={rng.integers(1, 50)} at {_time(rng)} owner {' '.join(ids) or 'none'}"
    return "; ".join(f"{_time(rng)} {rng.choice(LOG_EVENTS)} {i}" for i in ids) or f"{_time(rng)} {rng.choice(LOG_EVENTS)}"


def generate_traces(cfg: GeneratorConfig) -> TraceSet:
    """A TraceSet over the five TOOLS; record ids ``c<cluster>-<i>``, partition = cluster."""
    rng = np.random.default_rng(cfg.seed)
    sizes = [cfg.n_fit] + [cfg.n_eval_per_cluster] * cfg.n_eval_clusters
    records = []
    for cluster, n in enumerate(sizes):
        for i in range(n):
            label = int(rng.integers(0, 2))
            project = str(rng.choice(PROJECTS))
            shown = label if rng.random() < cfg.strength else 1 - label
            planted = _code(rng, PREFIX[shown])
            results = []
            for tool in TOOLS:
                if tool == cfg.planted_tool:
                    text = f"src/{project}.py; {_file(planted)}; notes.txt"
                else:
                    text = _noise_text(tool, rng, project, cfg.noise_ids)
                    if tool == cfg.duplicate_in:
                        text += f"; wrote {_file(planted)}"
                results.append(ToolResult(tool, text))
            question = f"Will the {project} build pass?"
            records.append(TraceRecord(f"c{cluster}-{i}", label, str(cluster), tuple(results),
                                       {"question": question}, {"project": project}))
    return TraceSet(records, list(TOOLS), "<generated>")


def write_demo_traces(cfg: GeneratorConfig, path: str | Path) -> TraceSet:
    traces = generate_traces(cfg)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_traces(traces, path)
    traces.source = str(path)
    return traces
