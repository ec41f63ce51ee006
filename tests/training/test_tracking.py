"""Trackers: the JSONL file always, W&B offline with group/tags, secrets never logged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from tests.training.conftest import ASSETS, ROOT, TINY
from toolsense.tracking import JsonlTracker, make_tracker, redact
from toolsense.training.config import LoggerConfig


def test_redact_drops_secret_values_only():
    cfg = {"model": {"eos_token": "<|im_end|>"}, "logger": {"api_key": "abc", "nested": [{"WANDB_KEY": "x", "ok": 1}]}, "hf_token": "t"}
    assert redact(cfg) == {"model": {"eos_token": "<|im_end|>"},
                           "logger": {"api_key": "***", "nested": [{"WANDB_KEY": "***", "ok": 1}]},
                           "hf_token": "***"}


def test_jsonl_appends_across_instances(tmp_path):
    JsonlTracker(tmp_path / "m.jsonl", {"stage": "stage1"}).log({"train/stage1/loss": 2.5}, 1)
    JsonlTracker(tmp_path / "m.jsonl", {"stage": "stage1"}).log({"train/stage1/loss": 2.0}, 2)
    rows = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [(r["step"], r["stage"], r["train/stage1/loss"]) for r in rows] == [(1, "stage1", 2.5), (2, "stage1", 2.0)]


def test_wandb_offline_run_grouped_and_tagged(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_API_KEY", "secret-not-to-be-logged-0123456789012345")
    t = make_tracker(LoggerConfig(kind="wandb", mode="offline"), run_dir=tmp_path, name="tg-lora-stage1", group="tg",
                     tags=["stage:stage1", "tuning:lora", "format:desc2tok"], config={"tuning": {"method": "lora"}})
    try:
        t.log({"train/stage1/loss": 1.5}, 1)
        run = t.trackers[1]._run
        assert (run.group, run.name, sorted(run.tags)) == ("tg", "tg-lora-stage1", ["format:desc2tok", "stage:stage1", "tuning:lora"])
        assert run.config["tuning"] == {"method": "lora"}
    finally:
        t.finish()
    files = [p for p in (tmp_path / "wandb").rglob("*") if p.is_file()]
    assert files and not any(b"secret-not-to-be-logged" in p.read_bytes() for p in files)
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["train/stage1/loss"] == 1.5


SENTINEL = "sentinel-wandb-key-must-not-leak-0123456789"


def _wandb_records(path: Path) -> Iterator[bytes]:
    """The records of an offline ``.wandb`` file: wandb's LevelDB-log layout (7-byte file header
    ``:W&B`` + magic + version, then 32 KiB blocks of ``crc32 | length | type | data`` chunks,
    type 1 = whole record, 2/3/4 = first/middle/last piece)."""
    raw = path.read_bytes()
    assert raw[:4] == b":W&B", path
    pos, parts = 7, b""
    while pos + 7 <= len(raw):
        if 32768 - pos % 32768 < 7:  # block trailer too small for a chunk header: padding
            pos += 32768 - pos % 32768
            continue
        length, kind = int.from_bytes(raw[pos + 4:pos + 6], "little"), raw[pos + 6]
        chunk, pos = raw[pos + 7:pos + 7 + length], pos + 7 + length
        if kind in (1, 2):
            parts = chunk
        elif kind in (3, 4):
            parts += chunk
        if kind in (1, 4):
            yield parts
        if kind == 0:
            break


def _key(item) -> str:
    return item.key or "/".join(item.nested_key)


def _offline_run(run_dir: Path, job_type: str) -> dict:
    """The first offline W&B run of ``job_type`` under ``run_dir``, read back from its .wandb
    file: run record (config, tags, group), history rows and summary."""
    from wandb.proto import wandb_internal_pb2 as pb

    for path in sorted(run_dir.rglob("offline-run-*/run-*.wandb")):
        got: dict = {"history": [], "summary": {}}
        for data in _wandb_records(path):
            rec = pb.Record()
            rec.ParseFromString(data)
            kind = rec.WhichOneof("record_type")
            if kind == "run":
                got.update(group=rec.run.run_group, tags=list(rec.run.tags), job_type=rec.run.job_type,
                           config={i.key: json.loads(i.value_json) for i in rec.run.config.update})
            elif kind == "history":
                got["history"].append({_key(i): json.loads(i.value_json) for i in rec.history.item})
            elif kind == "summary":
                got["summary"].update({_key(i): json.loads(i.value_json) for i in rec.summary.update})
        if got.get("job_type") == job_type:
            return got
    raise AssertionError(f"no offline {job_type} run under {run_dir}")


def test_sweep_logs_comparable_wandb_runs_without_the_key(tmp_path):
    """A real one-job -m sweep with logger=wandb: training (both stages) and the evaluation after
    it are offline W&B runs in the sweep's group, labelled, with curves under train/ and metrics
    with intervals under eval/; WANDB_API_KEY appears in no file it wrote."""
    sweep = tmp_path / "sweep"
    evaluate = ["evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={ASSETS / 'queries.jsonl'}",
                "evaluate.settings.benchmarks.generated.split=test", "evaluate.decoding=beam10", "evaluate.settings.metrics.resamples=100"]
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", *[o for o in TINY if "max_steps" not in o], "stage1.max_steps=2",
           "stage2.max_steps=3", "experiment=tg_3fm", "trainer.seed=7", "logger=wandb", "stage2.sources.0.split=train", *evaluate,
           f"hydra.sweep.dir={sweep}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "WANDB_API_KEY": SENTINEL, "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    run_dir = sweep / "0_tg_3fm-lora"
    labels = {"experiment": "tg_3fm", "index_scheme": "flat", "formats": "desc2tok+tok2desc+mcts", "tuning": "lora", "seed": "7",
              "model": "tiny_random"}
    stage1 = _offline_run(run_dir, "train")  # the first train run: stage 1
    evaluation = _offline_run(run_dir / "eval", "evaluate")
    for w, tag in ((stage1, "stage:stage1"), (evaluation, "job:evaluate")):
        assert w["group"] == "sweep"  # the sweep directory's name
        assert {f"{k}:{v}" for k, v in labels.items()} | {tag} <= set(w["tags"])
        assert w["config"]["labels"] == labels
    assert stage1["config"]["experiment"] == "tg_3fm" and stage1["config"]["trainer"]["seed"] == 7
    # the evaluation's run carries the evaluation's own config, not the training config
    ev_cfg = evaluation["config"]
    assert ev_cfg["trained_experiment"] == "tg_3fm" and ev_cfg["stage"] == "stage2" and ev_cfg["task"] == "evaluate"
    assert ev_cfg["decoding"]["beam_width"] == 10 and ev_cfg["metrics"]["resamples"] == 100 and "trainer" not in ev_cfg
    assert [r["train/stage1/loss"] for r in stage1["history"] if "train/stage1/loss" in r] == [
        r["train/stage1/loss"] for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines()) if "train/stage1/loss" in r]
    ev = _offline_run(run_dir / "eval", "evaluate")["summary"]
    res = json.loads((run_dir / "eval" / "generated" / "model" / "results.json").read_text())
    key, rc1 = f"eval/generated/{res['system']}/Rc@1", res["metrics"]["Rc@1"]
    assert (ev[key], ev[f"{key}_lo"], ev[f"{key}_hi"]) == (rc1["value"], rc1["lo"], rc1["hi"]) and rc1["lo"] <= rc1["value"] <= rc1["hi"]
    assert f"wandb sync {run_dir / 'wandb'}/offline-run-" in out.stdout
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 20 and not [p for p in files if SENTINEL.encode() in p.read_bytes()]


def test_generate_summary_goes_through_the_one_tracker(tmp_path, monkeypatch):
    """generate.py's gen/ counts: only numeric gen/ keys are logged, through the same JSONL + W&B
    trackers (config redacted); kind=none logs nowhere."""
    from toolsense.tracking import LoggerConfig as SharedLoggerConfig
    from toolsense.tracking import log_job_summary

    assert SharedLoggerConfig is LoggerConfig  # training's logger section is the shared one
    summary = {"gen/rrb/easy/accepted": 3, "gen/qa/rejected": 1, "rejection_reasons": {"dup": 1}, "usage": {"tokens": 9},
               "output_dir": str(tmp_path)}
    none = log_job_summary(LoggerConfig(), summary, prefix="gen", out=tmp_path / "none", config={}, job_type="generate")
    assert none == {"gen/rrb/easy/accepted": 3.0, "gen/qa/rejected": 1.0} and not (tmp_path / "none").exists()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_API_KEY", SENTINEL)
    log_job_summary(LoggerConfig(kind="wandb", mode="offline"), summary, prefix="gen", out=tmp_path,
                    config={"writer": {"api_key": "k-1"}}, job_type="generate")
    row = json.loads((tmp_path / "metrics.jsonl").read_text())
    assert {k: v for k, v in row.items() if k.startswith("gen/")} == none and "usage" not in row
    assert not any(b"k-1" in p.read_bytes() or SENTINEL.encode() in p.read_bytes()
                   for p in (tmp_path / "wandb").rglob("*") if p.is_file())
