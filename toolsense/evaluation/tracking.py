"""Optional tracker logging of evaluation metrics (``eval_logger`` config group), through
:mod:`toolsense.tracking` (the same JSONL + W&B trackers as training, so the config is redacted
and the W&B run carries the trained run's labels and group). Files on disk stay the source of
truth; the tracker only mirrors them. ``finish()`` always runs."""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Optional

import yaml

from toolsense.tracking import make_tracker, run_labels

log = logging.getLogger(__name__)


@dataclass
class EvalLoggerConfig:
    kind: Literal["none", "wandb"] = "none"
    """none: files only; wandb: also log metrics to Weights & Biases (WANDB_API_KEY from the environment)."""
    project: str = "toolsense"
    entity: Optional[str] = None
    name: Optional[str] = None
    """W&B run name; None = ``<experiment>-<tuning>-eval`` of the evaluated run."""
    mode: Optional[str] = None
    """wandb mode (online | offline | disabled); None = WANDB_MODE, else offline."""
    group: Optional[str] = None
    """W&B group; None = the evaluated run's (its sweep, else its experiment)."""
    tags: list[str] = field(default_factory=list)


def flatten_results(results: list[dict]) -> dict[str, float]:
    """``eval/<benchmark>/<system>/<metric>`` -> value, with its 95% interval as ``..._lo`` / ``..._hi``."""
    out = {}
    for r in results:
        for name, est in r["metrics"].items():
            if isinstance(est, dict) and est.get("value") is not None:
                key = f"eval/{r['benchmark']}/{r['system']}/{name}"
                out[key] = est["value"]
                out.update({f"{key}_{b}": est[b] for b in ("lo", "hi") if est.get(b) is not None})
    return out


def _trained_config(run: Any) -> dict:
    path = Path(str(run)) / "config.yaml" if run else None
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {} if path is not None and path.exists() else {}


@contextmanager
def tracker(cfg: EvalLoggerConfig, config: dict[str, Any], out: str | Path) -> Iterator[Callable[[dict], None]]:
    """Yields a ``log(dict)`` callable (a no-op for kind=none) whose W&B run lives in ``out/wandb``
    and is labelled and grouped like the training run ``config["run"]`` (when given)."""
    if cfg.kind == "none":
        yield lambda metrics: None
        return
    trained = _trained_config(config.get("run"))
    labels = run_labels(trained)
    cfg.mode = cfg.mode or os.environ.get("WANDB_MODE", "offline")
    group = (trained.get("logger") or {}).get("group") or labels.get("experiment") or "evaluate"
    name = cfg.name or "-".join([*(labels[k] for k in ("experiment", "tuning") if k in labels), "eval"])
    base = trained or {"model": config.get("model")}
    track = make_tracker(cfg, run_dir=Path(out), name=name, group=group, tags=["job:evaluate"], config={**base, "evaluate": config},
                         job_type="evaluate")
    try:
        yield lambda metrics: track.log(metrics, 0)
    finally:
        track.finish()
