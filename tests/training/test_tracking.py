"""Trackers: the JSONL file always, W&B offline with group/tags, secrets never logged."""

from __future__ import annotations

import json

from toolsense.tracking import JsonlTracker, make_tracker, redact
from toolsense.training.config import LoggerConfig


def test_redact_drops_secret_values_only():
    cfg = {"model": {"eos_token": "<|im_end|>"}, "logger": {"api_key": "abc", "nested": [{"WANDB_KEY": "x", "ok": 1}]}, "hf_token": "t"}
    assert redact(cfg) == {"model": {"eos_token": "<|im_end|>"}, "logger": {"api_key": "***", "nested": [{"WANDB_KEY": "***", "ok": 1}]}, "hf_token": "***"}


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
