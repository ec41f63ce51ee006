"""Optional tracker logging of evaluation metrics (``eval_logger`` config group). Files on disk
stay the source of truth; the tracker only mirrors them. ``finish()`` always runs."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Optional

log = logging.getLogger(__name__)


@dataclass
class EvalLoggerConfig:
    kind: Literal["none", "wandb"] = "none"
    """none: files only; wandb: also log metrics to Weights & Biases (WANDB_API_KEY from the environment)."""
    project: str = "toolsense"
    name: Optional[str] = None
    mode: Optional[str] = None
    """wandb mode (online | offline | disabled); None = wandb's own default / WANDB_MODE."""


def flatten_results(results: list[dict]) -> dict[str, float]:
    """``eval/<benchmark>/<system>/<metric>`` -> value (point estimates only)."""
    out = {}
    for r in results:
        for name, est in r["metrics"].items():
            if isinstance(est, dict) and est.get("value") is not None:
                out[f"eval/{r['benchmark']}/{r['system']}/{name}"] = est["value"]
    return out


@contextmanager
def tracker(cfg: EvalLoggerConfig, config: dict[str, Any]) -> Iterator[Any]:
    """Yields a ``log(dict)`` callable; a no-op for kind=none."""
    if cfg.kind == "none":
        yield lambda metrics: None
        return
    import wandb

    run = wandb.init(project=cfg.project, name=cfg.name, mode=cfg.mode, config=config, job_type="evaluate")
    try:
        yield run.log
    finally:
        run.finish()
