"""The retrieval queries a training run will be scored on, for ``train.py``'s leakage refusal.

``train.py evaluate.suite=... evaluate.overrides=[...]`` evaluates each trained stage with
evaluate.py's own config (:func:`toolsense.evaluation.runner.evaluate_trained_run`). Before any
training starts, :func:`scored_query_sets` composes those same evaluate configs and loads their
retrieval benchmarks, so that :func:`toolsense.data.leakage.refuse_leakage` can refuse Stage-2
sources that hold a scored query (a model that trained on a test query scores it from memory).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from toolsense.data.leakage import QuerySet
from toolsense.evaluation.benchmarks import load_benchmark
from toolsense.evaluation.config import compose_evaluate


def scored_query_sets(suite: str | None, overrides: Sequence[str] = (), stages: Sequence[str] = ("stage2",),
                      stage_overrides: Mapping[str, Sequence[str]] | None = None) -> list[QuerySet]:
    """Every retrieval benchmark the evaluation after training will score (each stage's suite and
    overrides, as ``evaluate_trained_run`` composes them), named ``benchmarks.<label>`` with the
    files it reads; [] when the run is not evaluated. A benchmark that cannot load (a missing
    file) fails here, before training, naming its config key."""
    if suite is None and not overrides:
        return []
    seen: dict[tuple[str, tuple[str, ...]], QuerySet] = {}
    for stage in stages:
        ovr = ([f"suite={suite}"] if suite else []) + list(overrides) + list((stage_overrides or {}).get(stage, ()))
        cfg = compose_evaluate(ovr)
        for label, bc in cfg.benchmark_sections().items():
            if bc.loader in ("mcq", "qa"):  # probe items ask about tools; they are not retrieval queries
                continue
            bench = load_benchmark(bc, f"benchmarks.{label}")
            seen.setdefault((label, tuple(bench.files)), QuerySet(f"benchmarks.{label}", tuple(bench.files), bench.items))
    return list(seen.values())
