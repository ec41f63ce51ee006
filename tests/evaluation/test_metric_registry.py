"""One registration is enough for a new metric: an evaluation of the tiny run writes it per item and
in results.json, table.md and report.html show it, and compare.py tabulates it with its interval,
tests it per item and puts it on the comparison page — nothing else names it (metrics/registry.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from toolsense.comparison.compare import CompareConfig, run_compare
from toolsense.evaluation.runner import run
from toolsense.metrics.registry import METRICS, Metric, register
from toolsense.reporting.tables import estimate


def reciprocal_rank(ranking, gold, k):
    """1 / the rank of the first gold tool in the top k, 0 without one (MRR@k over items)."""
    return next((1 / (i + 1) for i, t in enumerate(ranking[:k]) if t is not None and t in set(gold)), 0.0)


@pytest.fixture
def mrr_metric():
    metric = register(Metric("mrr", "mrr_{mode}@{k}", reciprocal_rank, column="MRR{mode}@{k}"))
    try:
        yield metric
    finally:
        METRICS.remove("mrr")


def _cell(table: str, row: int, column: str) -> str:
    lines = table.splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [c.strip() for c in lines[2 + row].strip("|").split("|")][head.index(column)]


def _expected(folder, k):
    """Per item, from the samples' constrained beams themselves (not through the registry)."""
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    tools = [[b["tool"] for b in r["constrained"]] for r in rows]
    return rows, [next((1 / (i + 1) for i, t in enumerate(ts[:k]) if t in r["gold"]), 0.0)
                  for ts, r in zip(tools, rows)]


def test_a_registered_metric_reaches_results_table_comparison_and_both_pages(mrr_metric, tiny_run, tmp_path):
    out = tmp_path / "eval"
    cfg = {"run": str(tiny_run), "stage": "stage2", "device": "cpu", "task": "evaluate", "output_dir": str(out),
           "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 8}},
           "baselines": {"bm25": {"kind": "bm25"}}, "decoding": {"beam_width": 5, "batch_size": 4},
           "metrics": {"ks": [1, 5], "resamples": 100}, "logger": {"kind": "none"}}
    model, bm25 = run(cfg)["results"]
    rows, expect = _expected(out / "realistic" / "bm25", 5)
    assert [r["metrics"]["c_mrr@5"] for r in rows] == pytest.approx(expect) and 0 < np.mean(expect) < 1
    est = bm25["metrics"]["mrr_c@5"]
    assert est["value"] == pytest.approx(np.mean(expect)) and est["lo"] <= est["value"] <= est["hi"]
    assert est["lo"] < est["hi"]
    model_rows, model_expect = _expected(out / "realistic" / "model", 5)
    assert "f_mrr@5" in model_rows[0]["metrics"] and "mrr_f@5" in model["metrics"] and "mrr_f@5" not in bm25["metrics"]
    assert model["metrics"]["mrr_c@5"]["value"] == pytest.approx(np.mean(model_expect))

    table = (out / "table.md").read_text()
    assert _cell(table, 1, "MRRc@5") == estimate(est) and _cell(table, 1, "MRRf@5") == "—"
    page = (out / "report.html").read_text()
    assert "<th>MRRf@1</th>" in page and f'data-metric="mrr_c@5" data-value="{est["value"]!r}"' in page

    comp = run_compare(CompareConfig(roots=[str(out)], metrics=["Rc@5", "mrr_c@5"], plots=False), tmp_path / "cmp")
    label = next(r for r in comp["rows"] if r not in comp["baselines"])
    assert comp["cells"]["bm25"]["realistic mrr_c@5"]["value"] == pytest.approx(np.mean(expect))
    cell = comp["cells"][label]["realistic mrr_c@5"]  # one training seed: recomputed from its samples, over items
    assert cell["value"] == pytest.approx(np.mean(model_expect)) and cell["one_seed"]
    test = next(t for t in comp["statistics"]["significance"]["tests"] if t["column"] == "realistic mrr_c@5")
    assert test["n"] == 8 and abs(test["diff"]) == pytest.approx(abs(np.mean(expect) - np.mean(model_expect)))
    assert "| realistic mrr_c@5 |" in (tmp_path / "cmp" / "comparison.md").read_text().splitlines()[0]
    assert 'data-col="realistic mrr_c@5"' in (tmp_path / "cmp" / "report.html").read_text()


def test_results_json_carries_ndcg_at_5_the_mean_of_each_items_ndcg_by_hand(tmp_path):
    """NDCG@k is a registered per-item metric (ndcg_{c,f}@k): an evaluation's results.json holds ndcg_c@5 with its
    bootstrap interval, the mean of each item's NDCG@5 recomputed here from the samples' constrained rankings."""
    out = tmp_path / "eval"
    run({"parametric": False, "run": None, "catalog": {"path": None}, "baselines": {"bm25": {"kind": "bm25"}},
         "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 8}},
         "decoding": {"beam_width": 5}, "metrics": {"ks": [1, 5], "resamples": 100}, "output_dir": str(out),
         "logger": {"kind": "none"}})
    folder = out / "realistic" / "bm25"
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]

    def ndcg(tools, gold, k):
        dcg = sum(1 / math.log2(i + 2) for i, t in enumerate(tools[:k]) if t in gold)
        return dcg / sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))

    expect = [ndcg([b["tool"] for b in r["constrained"]], set(r["gold"]), 5) for r in rows]
    assert [r["metrics"]["c_ndcg@5"] for r in rows] == pytest.approx(expect) and 0 < np.mean(expect) < 1
    est = json.loads((folder / "results.json").read_text())["metrics"][METRICS.key("ndcg_c", 5)]
    assert est["value"] == pytest.approx(np.mean(expect)) and est["lo"] < est["value"] < est["hi"]
