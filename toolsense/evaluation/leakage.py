"""The retrieval queries a training run will be scored on, for ``train.py``'s leakage refusal.

``train.py evaluate.suite=... evaluate.skip=[...]`` evaluates each trained stage with
evaluate.py's own config, composed once before training (``toolsense/pipeline.py: evaluation_plan``).
From those same typed configs :func:`scored_query_sets` loads the retrieval benchmarks, so that
:func:`toolsense.data.leakage.refuse_leakage` can refuse Stage-2 sources that hold a scored query
(a model that trained on a test query scores it from memory).
"""

from __future__ import annotations

from typing import Sequence

from toolsense.data.leakage import QuerySet
from toolsense.evaluation.benchmarks import load_benchmarks
from toolsense.evaluation.config import EvaluateConfig, Task


def scored_query_sets(plan: Sequence[EvaluateConfig]) -> list[QuerySet]:
    """Every retrieval benchmark the evaluations of ``plan`` score, named ``benchmarks.<label>``
    with the files it reads; [] when the run is not evaluated. A benchmark that cannot load (a
    missing file) fails here, before training, naming its config key."""
    seen: dict[tuple[str, tuple[str, ...]], QuerySet] = {}
    for cfg in plan:
        if cfg.task != Task.evaluate:
            continue
        for label, bench in load_benchmarks(cfg.benchmark, cfg.benchmarks, probes=False).items():
            files = tuple(bench.files)
            seen.setdefault((label, files), QuerySet(f"benchmarks.{label}", files, bench.items))
    return list(seen.values())
