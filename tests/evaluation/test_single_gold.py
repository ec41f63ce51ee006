"""#47: a benchmark restricted to its single-gold items (``benchmark.max_gold``), the extension suite's
``realistic_single`` column: exactly the items whose file gives one gold tool, counted from the file independently."""

from __future__ import annotations

import json

import pytest

from toolsense.catalog.loaders import DEMO_DIR
from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
from toolsense.evaluation.fingerprint import benchmark_identity


def test_max_gold_keeps_exactly_the_demo_items_with_one_gold_tool():
    rows = [json.loads(line) for line in (DEMO_DIR / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    test_short = [r for r in rows if r["split"] == "test" and r["style"] == "short"]
    one = {r["query_id"] for r in test_short if len(r["tools"]) == 1}
    assert len(test_short) == 54 and len(one) == 46  # the shipped demo file: 8 realistic test items with 2+ gold tools
    full = load_benchmark(BenchmarkConfig(loader="demo", style="short"))
    single = load_benchmark(BenchmarkConfig(loader="demo", style="short", max_gold=1, label="realistic_single"))
    assert len(full.items) == 54 and {q.query_id for q in single.items} == one
    assert single.name == "realistic_single" and single.sha256 == full.sha256  # same file, fewer items
    two = load_benchmark(BenchmarkConfig(loader="demo", style="short", max_gold=2))
    assert {q.query_id for q in two.items} == {r["query_id"] for r in test_short if len(r["tools"]) <= 2}
    # a filtered benchmark is a different evaluation: its fingerprint says so; unset, the fingerprint is as before
    assert benchmark_identity(single)["max_gold"] == 1 and "max_gold" not in benchmark_identity(full)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_gold": 0}, r"benchmark.max_gold keeps retrieval items by their gold tools: >= 1 or null, got 0"),
    ({"loader": "mcq", "max_gold": 1}, r"benchmark.max_gold keeps retrieval items"),
])
def test_max_gold_is_refused_where_it_cannot_select(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BenchmarkConfig(**kwargs)


def test_the_released_rrb_part_has_83_single_gold_items(study_tools_catalog):
    """The released RRB part of the study catalogs (243 of 500 items, many with 2-8 gold tools): 83 have one."""
    from toolsense.catalog.study_tools import rrb_path

    path = rrb_path(study_tools_catalog)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    one = {r["sample_id"] for r in rows if isinstance(r["tool"], dict) or len(r["tool"]) == 1}
    single = load_benchmark(BenchmarkConfig(loader="rrb", path=str(path), max_gold=1))
    assert len(rows) == 243 and len(one) == 83
    assert {q.query_id for q in single.items} == one and all(len(q.tools) == 1 for q in single.items)


def test_the_extension_suite_is_the_replication_suite_and_realistic_single():
    from toolsense.evaluation.config import compose_evaluate

    ext, rep = compose_evaluate(["suite=study_extension"]), compose_evaluate(["suite=study_replication"])
    assert list(ext.benchmarks) == [*rep.benchmarks, "realistic_single"] and ext.baselines.keys() == rep.baselines.keys()
    single, realistic = ext.benchmarks["realistic_single"], ext.benchmarks["realistic"]
    assert (single.loader, single.label, single.max_gold, single.path) == ("rrb", "realistic_single", 1, realistic.path)
    assert all(ext.benchmarks[b] == rep.benchmarks[b] for b in rep.benchmarks)
