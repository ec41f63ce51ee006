"""Experiment tracking for every job: local JSONL always, Weights & Biases optionally
(``logger=wandb``); metrics namespaced ``train/``, ``eval/``, ``gen/``; configs redacted."""

from toolsense.tracking.trackers import (TRACKERS, Files, JobLog, JsonlTracker, LoggerConfig, LoggerKind, MultiTracker, Tracker,
                                         WandbTracker, eval_metrics, evaluation_tracker, forget_rows, job_tracker, log_job_summary,
                                         make_tracker,
                                         namespaced, redact, run_labels, wandb_mode)

__all__ = ["TRACKERS", "Files", "JobLog", "JsonlTracker", "LoggerConfig", "LoggerKind", "MultiTracker", "Tracker", "WandbTracker",
           "eval_metrics", "evaluation_tracker", "forget_rows", "job_tracker", "log_job_summary", "make_tracker", "namespaced", "redact", "run_labels",
           "wandb_mode"]
