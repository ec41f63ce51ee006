"""Issue 45 item 4: a k at or above the number of tools a system ranks was reported as a score (over a 1-tool
catalog Rc@10 = 100% for the model and BM25, over 9 tools every system had Rc@10 = 100%). Such values are now
flagged ``trivial`` per metric in results.json and in table.md, with one warning per job."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from toolsense.evaluation.runner import run

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "training"


def _cfg(tmp_path, catalog, queries, **extra):
    return {"model": {"name_or_path": "tiny_random", "dtype": "float32"}, "device": "cpu", "catalog": {"path": str(catalog)},
            "benchmarks": {"q": {"loader": "query_jsonl", "path": str(queries)}}, "baselines": {"bm25": {"kind": "bm25"}},
            "decoding": {"beam_width": 10, "batch_size": 4}, "metrics": {"ks": [1, 5, 10], "resamples": 10},
            "probe": {"modes": []}, "output_dir": str(tmp_path / "out"), **extra}


def test_one_tool_catalog_flags_every_constrained_cutoff(tmp_path, caplog):
    tool = ASSETS.joinpath("tools.jsonl").read_text().splitlines()[0]
    name = json.loads(tool)["tool_name"]
    (tmp_path / "one.jsonl").write_text(tool + "\n")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"query_id": f"q{i}", "query": t, "tools": [name]}) + "\n"
                                              for i, t in enumerate(["weather now in Oslo", "is it raining"])))
    with caplog.at_level(logging.WARNING, logger="toolsense.metrics.aggregate"):
        summary = run(_cfg(tmp_path, tmp_path / "one.jsonl", tmp_path / "q.jsonl"))
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    for res in saved["results"]:  # the untrained model and BM25 alike
        assert res["n_tools"] == 1 and res["trivial"] == [f"{m}@{k}" for m in ("Rc", "recall_c", "COMPc") for k in (1, 5, 10)] + ["Rprec_c"]
        assert res["metrics"]["Rc@10"] == {**res["metrics"]["Rc@10"], "value": 1.0, "trivial": True}
        assert "trivial" not in res["metrics"].get("Rf@10", {})  # free-form may name tools outside the catalog
    table = (tmp_path / "out" / "table.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| q | bm25 |"))
    assert row.count("100.0 [100.0, 100.0] (trivial)") == 7 and " 100.0 [100.0, 100.0] |" not in row
    warnings = [r for r in caplog.records if "flagged 'trivial'" in r.getMessage()]
    assert len(warnings) == 1 and "q/bm25 (1 tools" in warnings[0].getMessage()
    assert [r["system"] for r in summary["results"]] == ["tiny_random:untrained", "bm25"]


def test_nine_tools_flag_k_10_only(tmp_path):
    queries = ASSETS / "queries.jsonl"
    res = run(_cfg(tmp_path, ASSETS / "tools.jsonl", queries, parametric=False))["results"][0]
    assert res["n_tools"] == 9 and res["trivial"] == ["Rc@10", "recall_c@10", "COMPc@10"]
    assert res["metrics"]["Rc@10"]["value"] == 1.0 and res["metrics"]["Rc@10"]["trivial"] is True
    assert "trivial" not in res["metrics"]["Rc@5"] and "trivial" not in res["metrics"]["Rc@1"]
