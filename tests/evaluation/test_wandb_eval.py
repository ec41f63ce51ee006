"""An evaluation logged to W&B (offline), read back from the run's own files: the run's config is
the evaluation's (with the trained run's labels), the samples are a ``wandb.Table`` whose rows are
samples.jsonl's, and results.json / report.html / table.md are one ``evaluation`` artifact."""

from __future__ import annotations

import json
from pathlib import Path

from tests.training.test_tracking import _offline_run, _wandb_records
from toolsense.evaluation.runner import run

SENTINEL = "sentinel-wandb-key-must-not-leak-eval-0123456789"


def _artifacts(run_dir: Path) -> list[dict]:
    """The artifact records of the offline run under ``run_dir``: name, type and file names."""
    from wandb.proto import wandb_internal_pb2 as pb

    out = []
    for path in sorted(run_dir.rglob("offline-run-*/run-*.wandb")):
        for data in _wandb_records(path):
            rec = pb.Record()
            rec.ParseFromString(data)
            if rec.WhichOneof("record_type") == "artifact":
                out.append({"name": rec.artifact.name, "type": rec.artifact.type,
                            "files": sorted(c.path for c in rec.artifact.manifest.contents),
                            "digests": {c.path: c.digest for c in rec.artifact.manifest.contents}})
    return out


def _wait_for_exit(out: Path, seconds: float = 60.0) -> None:
    """wandb's writer process may still be flushing the offline file when ``finish()`` returns:
    wait until its last record (``exit``) is there."""
    import time

    from wandb.proto import wandb_internal_pb2 as pb

    def done() -> bool:
        for path in out.glob("wandb/offline-run-*/run-*.wandb"):
            for data in _wandb_records(path):
                rec = pb.Record()
                rec.ParseFromString(data)
                if rec.WhichOneof("record_type") == "exit":
                    return True
        return False

    end = time.time() + seconds
    while not done():
        assert time.time() < end, f"no finished offline W&B run under {out} after {seconds} s"
        time.sleep(0.5)


def test_evaluation_logs_its_config_samples_table_and_files(tiny_run, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_API_KEY", SENTINEL)
    out = tmp_path / "eval"
    run({"run": str(tiny_run), "stage": "stage2", "device": "cpu", "task": "evaluate", "parametric": True,
         "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 6},
                        "qa": {"loader": "qa", "limit": 4}},
         "decoding": {"beam_width": 5, "batch_size": 4}, "metrics": {"ks": [1, 5], "resamples": 20},
         "probe": {"modes": ["token"]}, "logger": {"kind": "wandb", "mode": "offline"}, "output_dir": str(out)})
    _wait_for_exit(out)
    w = _offline_run(out, "evaluate")
    cfg = w["config"]
    assert cfg["decoding"]["beam_width"] == 5 and cfg["metrics"]["ks"] == [1, 5] and cfg["run"] == str(tiny_run)
    assert sorted(cfg["benchmarks"]) == ["qa", "realistic"] and "stage1" not in cfg  # not the training config
    trained = json.loads(json.dumps(__import__("yaml").safe_load((tiny_run / "config.yaml").read_text())))
    assert cfg["labels"]["model"] == trained["model"]["name_or_path"] and f"model:{cfg['labels']['model']}" in w["tags"]
    # the model section is the evaluated one, the run's (not evaluate.py's unused default, smollm2_135m)
    assert {k: cfg["model"][k] for k in trained["model"]} == trained["model"]
    assert cfg["model"]["name_or_path"] == "tiny_random" and cfg["model"]["dtype"] == "float32"
    # the samples table: its file under the offline run, one row per sample of either benchmark
    ref = {k.split("/")[-1]: v for k, v in w["summary"].items() if k.startswith("eval/samples/")}
    assert ref["_type"] == "table-file" and ref["nrows"] == 6 + 4
    table = json.loads(next(out.glob(f"wandb/offline-run-*/files/{ref['path']}")).read_text())
    rows = [dict(zip(table["columns"], r)) for r in table["data"]]
    model_samples = {r["item_id"]: r for r in map(json.loads, (out / "realistic" / "model" / "samples.jsonl").read_text().splitlines())}
    qa_samples = {r["item_id"]: r for r in map(json.loads, (out / "qa" / "token" / "samples.jsonl").read_text().splitlines())}
    for row in rows:
        if row["kind"] == "retrieval":
            s = model_samples[row["item_id"]]
            assert row["constrained"].split(" | ")[0] == s["constrained"][0]["tool"]
            assert row["hit@5"] == s["metrics"]["c_hit@5"] and row["query"] == s["query"]
            assert row["f_hit@5"] == s["metrics"]["f_hit@5"]  # the free-form hits beside the constrained ones
        else:
            s = qa_samples[row["item_id"]]
            assert (row["pred"], row["correct"], row["gold"]) == (s["pred"], s["correct"], s["gold"])
    assert {r["kind"] for r in rows} == {"retrieval", "qa"}
    # results.json, report.html and table.md as one artifact, byte for byte
    art = next(a for a in _artifacts(out) if a["type"] == "evaluation")
    assert art["files"] == ["report.html", "results.json", "table.md"]
    import base64
    import hashlib

    for name, digest in art["digests"].items():
        assert base64.b64decode(digest) == hashlib.md5((out / name).read_bytes()).digest()
    assert not [p for p in out.rglob("*") if p.is_file() and SENTINEL.encode() in p.read_bytes()]


def test_the_wandb_config_names_the_model_evaluated(tiny_run, tmp_path, monkeypatch):
    """evaluate.py's own ``model`` section (default smollm2_135m) is unused beside ``run=``: W&B
    records the run's model, with evaluate.py's dtype / attn_implementation overrides; a
    baselines-only evaluation records no model."""
    from toolsense.evaluation.config import EvaluateConfig
    from toolsense.tracking import LoggerConfig, evaluation_tracker
    from toolsense.utils.config import as_plain, to_config

    monkeypatch.setenv("WANDB_MODE", "offline")
    logger = LoggerConfig(kind="wandb", mode="offline")
    cases = {"run": ({"run": str(tiny_run), "dtype": "bfloat16", "model": {"attn_implementation": "eager"}}, tiny_run),
             "baselines": ({"parametric": False}, None)}
    got = {}
    for name, (overrides, run_dir) in cases.items():
        plain = as_plain(to_config(EvaluateConfig, overrides))
        assert plain["model"]["name_or_path"] == "smollm2_135m"  # evaluate.py's default, not what is evaluated
        with evaluation_tracker(logger, plain, tmp_path / name, run_dir) as track:
            track({"eval/x": 1.0})
        _wait_for_exit(tmp_path / name)
        got[name] = _offline_run(tmp_path / name, "evaluate")["config"]
    assert got["run"]["model"] == {"name_or_path": "tiny_random", "dtype": "bfloat16", "eos_token": "<|im_end|>",
                                   "attn_implementation": "eager"}
    assert got["run"]["labels"]["model"] == "tiny_random"
    assert got["baselines"]["model"] is None and "model" not in got["baselines"]["labels"]
