"""The comparison's plots draw every configuration that has data in them: rows whose labels hold
``:`` (a Stage-1 row, a configuration told apart by dict-valued keys) are drawn like any other, and
each plot's data is written beside its PNG so that a missing row can be seen."""

from __future__ import annotations

import json

from tests.comparison.test_compare import _drift, _est, _probe, _run, _write
from toolsense.comparison.compare import CompareConfig, run_compare

SOURCES = "stage2:\n  sources:\n    kind: {kind}\n    path: $TOOLSENSE_CACHE/{kind}.jsonl\n"


def _sweep(root):
    """Two configurations told apart by a dict-valued key (labels that used to hold ``{'kind': ...}``),
    each with a Stage-1 retrieval result, probes and drift; plus the BM25 baseline."""
    for i, kind in enumerate(("verbose", "realistic_template")):
        run = _run(root, f"{i}_tg-lora", "tg", "lora", 0.4 + 0.1 * i, 0.3, extra=SOURCES.format(kind=kind))
        _write(run / "eval" / "stage1" / "standard" / "model" / "results.json", {
            "benchmark": "standard", "system": "m:stage1", "kind": "retrieval", "source": {"run": str(run), "stage": "stage1"},
            "metrics": {"Rc@1": _est(0.2), "Rf@1": _est(0.1), "IS@1": _est(0.5)}})
        _probe(run, "stage1", [1, 0, 1, 1])
        _drift(run)


def test_every_row_with_data_is_in_every_plot_and_its_data_file(tmp_path):
    _sweep(tmp_path / "sweep")
    comp = run_compare(CompareConfig(roots=[str(tmp_path / "sweep")], metrics=["Rc@1", "Rf@1", "IS@1"]), tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert len(saved["rows"]) == 4 and "tg-lora:stage1" in saved["rows"]  # 2 arms, their shared Stage 1, bm25
    wanted = {"recall_by_benchmark": " Rc@1", "is_by_configuration": " IS@1", "probe_accuracy": " acc",
              "drift": " virtual"}
    for name, suffix in wanted.items():
        data = json.loads((tmp_path / "out" / f"comparison_{name}.json").read_text())
        assert f"comparison_{name}.png" in {p.split("/")[-1] for p in comp["plots"]}
        with_data = [r for r in saved["rows"]
                     if any(v and v.get("value") is not None for c, v in saved["cells"][r].items() if c.endswith(suffix))]
        assert with_data and data["rows"] == with_data, name  # every row of comparison.json that has data, in order
        for r in with_data:  # the values drawn are the table's
            col = next(c for c in data["columns"] if c.endswith(suffix) and saved["cells"][r].get(c))
            assert data["cells"][r][col]["value"] == saved["cells"][r][col]["value"]
    recall = json.loads((tmp_path / "out" / "comparison_recall_by_benchmark.json").read_text())
    assert len(recall["rows"]) == 4 and "bm25" in recall["rows"]  # both arms, the Stage-1 row, the baseline
