import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolsense.evaluation.runner import run

ROOT = Path(__file__).resolve().parents[2]


def _cfg(run_dir, out, **extra):
    cfg = {
        "run": str(run_dir), "stage": "stage2", "device": "cpu", "task": "evaluate", "parametric": True,
        "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 12},
                       "qa": {"loader": "qa", "limit": 10}},
        "baselines": {"bm25": {"kind": "bm25"}},
        "decoding": {"beam_width": 10, "ks": [1, 5, 10], "batch_size": 4, "resamples": 200},
        "probe": {"modes": ["token", "control"]},
        "eval_logger": {"kind": "none"}, "output_dir": str(out),
    }
    cfg.update(extra)
    return cfg


def test_run_dir_evaluation_writes_results_samples_and_one_table(tiny_run, tmp_path, capsys):
    summary = run(_cfg(tiny_run, tmp_path))
    res = {(r["benchmark"], r["system"]): r for r in summary["results"]}
    assert set(res) == {("realistic", "tiny_random:stage2"), ("realistic", "bm25"), ("qa", "token"), ("qa", "control")}
    model = res[("realistic", "tiny_random:stage2")]
    assert model["n"] == 12 and model["missing"]["count"] == 0
    assert len(model["hashes"]["index_sha256"]) == 64 and len(model["hashes"]["benchmark_sha256"]) == 64
    assert model["git_sha"] and model["config"]["decoding"]["beam_width"] == 10
    rows = [json.loads(x) for x in (tmp_path / "realistic" / "model" / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    from toolsense.catalog import load_demo_catalog

    names = set(load_demo_catalog().names)
    for r in rows:
        assert len(r["constrained"]) == 10 and all(x["tool"] in names for x in r["constrained"])
        assert len(r["free"]) == 10 and "Pick the tool." in r["prompt"] and "Query: " + r["query"] in r["prompt"]
    rc1 = sum(any(g == r["constrained"][0]["tool"] for g in r["gold"]) for r in rows) / 12
    assert model["metrics"]["Rc@1"]["value"] == pytest.approx(rc1)
    rf = model["metrics"]["Rf@5"]["value"]
    rc = model["metrics"]["Rc@5"]["value"]
    assert model["metrics"]["IS@5"]["value"] == pytest.approx(0.0 if rc == 0 else rf / rc)
    assert set(model["tiers"]) <= {"1-tool", "2-tool", "3-tool"} and sum(t["n"] for t in model["tiers"].values()) == 12
    assert "IS@1" not in res[("realistic", "bm25")]["metrics"]
    table = (tmp_path / "table.md").read_text()
    assert table.count("\n") == 2 + 4 and "| realistic | bm25 | 12 |" in table
    assert table in capsys.readouterr().out
    # resume: a second run finds every item done and recomputes nothing
    before = (tmp_path / "realistic" / "model" / "samples.jsonl").read_text()
    again = run(_cfg(tiny_run, tmp_path))
    assert (tmp_path / "realistic" / "model" / "samples.jsonl").read_text() == before
    assert again["results"][0]["metrics"] == summary["results"][0]["metrics"]


def test_missing_gold_tools_are_reported_not_dropped(tiny_run, tmp_path):
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"query_id": "a", "query": "weather now", "tools": ["SkyCast Weather&&current_weather", "Ghost&&tool"]}) + "\n"
                     + json.dumps({"query_id": "b", "query": "haunted", "tools": ["Ghost&&tool"]}) + "\n")
    cfg = _cfg(tiny_run, tmp_path / "out", benchmarks={"custom": {"loader": "query_jsonl", "path": str(qfile)}}, baselines={})
    res = run(cfg)["results"][0]
    assert res["missing"] == {"count": 1, "queries_affected": 2, "names": ["Ghost&&tool"], "policy": "counted as misses"}
    rows = [json.loads(x) for x in (tmp_path / "out" / "custom" / "model" / "samples.jsonl").read_text().splitlines()]
    assert rows[1]["missing_gold"] == ["Ghost&&tool"] and rows[1]["metrics"]["c_hit@10"] == 0.0
    assert rows[0]["metrics"]["c_recall@10"] <= 0.5  # the missing tool stays in the denominator


def test_cli_untrained_model_with_hydra(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "evaluate.py", "model=tiny_random", "benchmark=demo_standard", "benchmark.limit=6", "baseline=dense",
           "decoding=beam10", "decoding.resamples=100", f"output_dir={tmp_path}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "results.json").read_text())
    systems = [r["system"] for r in summary["results"]]
    assert systems == ["tiny_random:untrained", "dense"]
    assert summary["results"][0]["source"] == {"run": None, "stage": "untrained", "model": "tiny_random"}
    assert "| standard | dense | 6 |" in proc.stdout


def test_unknown_config_field_is_named(tiny_run, tmp_path):
    cfg = _cfg(tiny_run, tmp_path, decoding={"beam_widht": 3})
    with pytest.raises(ValueError, match=r"decoding: unknown field\(s\) \['beam_widht'\]"):
        run(cfg)
    with pytest.raises(ValueError, match=r"decoding.ks must lie in \[1, beam_width=5\], got \[10\]"):
        run(_cfg(tiny_run, tmp_path, decoding={"beam_width": 5, "ks": [1, 10]}))
