"""Experiment tracking: local JSONL always, Weights & Biases optionally (``logger=wandb``)."""

from toolsense.tracking.trackers import TRACKERS, JsonlTracker, MultiTracker, Tracker, WandbTracker, make_tracker, redact, run_labels

__all__ = ["TRACKERS", "JsonlTracker", "MultiTracker", "Tracker", "WandbTracker", "make_tracker", "redact", "run_labels"]
