"""Data-parallel evaluation: two torchrun processes (gloo on CPU) share a benchmark's queries
and rank 0 merges — the same samples and metrics as one process; rank files resume across
world sizes and are folded away."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolsense.evaluation.distributed import Shard
from toolsense.evaluation.outputs import SampleLog

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}


def _samples(path: Path) -> dict[str, dict]:
    return {r["item_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_two_processes_equal_one(tiny_run, tmp_path):
    args = ["evaluate.py", f"run={tiny_run}", "device=cpu", "benchmark=demo_realistic", "benchmark.limit=13", "baseline=bm25",
            "decoding=beam10", "decoding.batch_size=4", "metrics.resamples=200"]
    one = subprocess.run([sys.executable, *args, f"output_dir={tmp_path / 'one'}"], cwd=ROOT, env=ENV,
                         capture_output=True, text=True, timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29571",
                          *args, f"output_dir={tmp_path / 'two'}"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    # the queries were shared out: 7 on rank 0, 6 on rank 1 (not 13 each)
    assert re.search(r"\[rank 0/2\]: 100%\|[^|]*\| 7/7 ", two.stderr) and re.search(r"\[rank 1/2\]: 100%\|[^|]*\| 6/6 ", two.stderr)

    for system in ("model", "bm25"):
        a, b = (json.loads((tmp_path / d / "realistic" / system / "results.json").read_text()) for d in ("one", "two"))
        assert b["n"] == a["n"] == 13
        for k, est in a["metrics"].items():
            assert b["metrics"][k]["value"] == pytest.approx(est["value"]), k
    sa, sb = (_samples(tmp_path / d / "realistic" / "model" / "samples.jsonl") for d in ("one", "two"))
    assert sa.keys() == sb.keys() and len(sa) == 13
    for i in sa:
        assert [x["tool"] for x in sb[i]["constrained"]] == [x["tool"] for x in sa[i]["constrained"]]
        assert [x["score"] for x in sb[i]["constrained"]] == pytest.approx([x["score"] for x in sa[i]["constrained"]], abs=1e-4)
    assert not list((tmp_path / "two" / "realistic" / "model").glob("samples.rank*.jsonl"))
    assert json.loads((tmp_path / "two" / "results.json").read_text())["results"][0]["n"] == 13

    # the same config again resumes: every rank finds its share done
    before = (tmp_path / "two" / "realistic" / "model" / "samples.jsonl").read_text()
    again = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29572",
                            *args, f"output_dir={tmp_path / 'two'}"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming" in again.stdout + again.stderr and "13 items already done" in again.stdout + again.stderr
    assert (tmp_path / "two" / "realistic" / "model" / "samples.jsonl").read_text() == before
    # another stage into the same folder: rank 0 refuses and rank 1 stops with it instead of waiting at a barrier
    other = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29573",
                            *args, "stage=stage1", f"output_dir={tmp_path / 'two'}"], cwd=ROOT, env=ENV, capture_output=True,
                           text=True, timeout=300)
    assert other.returncode != 0
    assert "system.stage: 'stage2' (on disk) vs 'stage1' (now)" in other.stderr
    assert "rank 0 stopped the evaluation: FingerprintMismatch" in other.stderr
    assert (tmp_path / "two" / "realistic" / "model" / "samples.jsonl").read_text() == before


def test_rank_files_count_as_done_and_fold_into_samples(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps({"item_id": "a", "v": 1}) + "\n")
    (tmp_path / "samples.rank0.jsonl").write_text(json.dumps({"item_id": "b", "v": 2}) + "\n")
    (tmp_path / "samples.rank1.jsonl").write_text(json.dumps({"item_id": "c", "v": 3}) + "\n" + '{"item_id": "d", "v"')
    with SampleLog(path) as log:  # one process resuming an interrupted two-process run
        assert [log.done(i) for i in "abcd"] == [True, True, True, False]  # d was torn mid-write
        assert (tmp_path / "samples.rank1.jsonl").read_text().endswith('"v"')  # another process's file: not cut
        log.add({"item_id": "d", "v": 4})
        log.consolidate(["d", "c", "b", "a"])
        assert [r["v"] for r in log.ordered("abcd")] == [1, 2, 3, 4]
    assert [json.loads(x)["item_id"] for x in path.read_text().splitlines()] == ["d", "c", "b", "a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.jsonl"]


def test_shards_cover_every_item_once():
    items = list(range(11))
    parts = [Shard(r, 4).take(items) for r in range(4)]
    assert sorted(sum(parts, [])) == items and parts[1] == [1, 5, 9]
    assert Shard().take(items) == items and Shard().main and not Shard(1, 2).main
