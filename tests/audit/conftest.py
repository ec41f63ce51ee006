"""Fixtures for the audit tests: a small generated trace set written to disk."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from toolsense.audit.generator import GeneratorConfig, write_demo_traces
from toolsense.audit.traces import load_traces

FAST_STATS = SimpleNamespace(n_boot=200, level=0.95, seed=0)


@pytest.fixture(scope="session")
def demo_traces_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "traces.jsonl"
    write_demo_traces(GeneratorConfig(n_fit=120, n_eval_per_cluster=24, n_eval_clusters=5, seed=0), path)
    return path


@pytest.fixture(scope="session")
def demo_traces(demo_traces_path):
    return load_traces(demo_traces_path, prompt_fields=["question"])


@pytest.fixture
def fast_stats():
    return FAST_STATS


def compose_audit(overrides: list[str]):
    """conf/audit.yaml composed with Hydra overrides, as `python audit.py ...` would see it."""
    from toolsense.audit import register_configs
    from toolsense.utils.compose import compose

    register_configs()
    return compose("audit", overrides)


@pytest.fixture
def compose():
    return compose_audit
