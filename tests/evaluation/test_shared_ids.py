"""Numeric and semantic ids (tokens shared between tools) through retrieval, probes and drift
on tiny_random runs of the demo catalog: the trie and beam search serve them unchanged, probes
spell the whole id and say the index is shared per level, drift counts each distinct token once."""

from __future__ import annotations

import json

import pytest

from tests.evaluation.conftest import make_run_dir
from toolsense.evaluation.config import DriftConfig
from toolsense.evaluation.drift import run_drift


@pytest.fixture(scope="module", params=["numeric", "semantic"])
def shared_run(request, tmp_path_factory, tiny_model_dir):
    return request.param, make_run_dir(tmp_path_factory.mktemp(request.param), request.param, perturb=0.5)


def test_retrieval_and_probes_on_shared_ids(shared_run, tmp_path):
    from toolsense.evaluation.runner import run

    builder, run_dir = shared_run
    cfg = {"run": str(run_dir), "stage": "stage2", "device": "cpu", "task": "evaluate",
           "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 4},
                          "qa": {"loader": "qa", "limit": 4}},
           "decoding": {"beam_width": 5, "batch_size": 4}, "metrics": {"ks": [1, 5], "resamples": 20},
           "probe": {"modes": ["token"]}, "logger": {"kind": "none"}, "output_dir": str(tmp_path)}
    res = {(r["benchmark"], r["system"]): r for r in run(cfg)["results"]}
    samples = [json.loads(ln) for ln in (tmp_path / "realistic" / "model" / "samples.jsonl").read_text().splitlines()]
    index = json.loads((run_dir / "index.json").read_text())
    names = {t["name"] for t in index["tools"]}
    assert len(samples) == 4 and all(len(s["constrained"]) == 5 and {x["tool"] for x in s["constrained"]} <= names for s in samples)
    probe = res[("qa", "token")]
    assert probe["index_sharing"]["unit"] == "per_level" and probe["index_sharing"]["shared_tokens"] > 0
    prompts = [json.loads(ln)["prompt"] for ln in (tmp_path / "qa" / "token" / "samples.jsonl").read_text().splitlines()]
    tokens = {t["name"]: "".join(t["tokens"]) for t in index["tools"]}
    rows = [json.loads(ln) for ln in (tmp_path / "qa" / "token" / "samples.jsonl").read_text().splitlines()]
    assert all(tokens[r["tool"]] in p for r, p in zip(rows, prompts))  # the whole id, every shared token of it


def test_drift_counts_each_shared_token_once(shared_run, tmp_path):
    builder, run_dir = shared_run
    s = run_drift(run_dir, DriftConfig(checkpoints=["stage1", "stage2"], sample_size=50), tmp_path)
    index = json.loads((run_dir / "index.json").read_text())
    distinct = {t for tool in index["tools"] for t in tool["tokens"]}
    assert s["n_virtual"] == len(distinct) < sum(len(t["tokens"]) for t in index["tools"])
    if builder == "numeric":
        assert s["n_virtual"] == 10 and s["index_sharing"]["max_tools_per_token"] > 12
    assert s["index_sharing"]["unit"] == "per_level" and s["pairs"][0]["input"]["virtual"] > 0.1
