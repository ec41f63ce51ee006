"""What a resumed stage must count once: its logged steps and its training loss.

A run killed after checkpoint N has already logged steps N+1 .. kill to ``metrics.jsonl``; the
rerun resumes at N and logs them again. And the Trainer's ``train_loss`` of the rerun averages
only the steps it ran itself. Here:

- :func:`forget_logged_after` drops the stage's rows after the resume step before it trains, so
  each ``(stage, step)`` row is written once (the rerun's rows replace the killed run's);
- :class:`LossTotalCallback` writes into every checkpoint the sum of the per-step losses so far
  (``loss_total.json``, which also marks the checkpoint complete), and on resume turns the
  Trainer's ``train_loss`` into the mean over all the stage's steps: the same number an
  uninterrupted run reports;
- the tokens trained on so far (TRL's ``num_tokens``, which TRL keeps in memory only) go into the
  same file, and the resumed Trainer counts on from them (:func:`tokens_at`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from transformers import TrainerCallback

from toolsense.tracking import forget_rows
from toolsense.utils.paths import atomic_write_text

LOSS_FILE = "loss_total.json"


def damaged_file(checkpoint: Path) -> Optional[str]:
    """Why a file of ``checkpoint`` cannot be read back (``<file>: <why>``), or None: a weights file
    (``*.safetensors``) shorter than its header says, a torch file (``*.pt``, ``*.pth``, ``*.bin``:
    zip archives) without its closing directory, a JSON file (the trainer's state) that does not
    parse: what a copy or a full disk cut short leaves. Only headers are read: checking costs no load."""
    import struct
    import zipfile

    for f in sorted(checkpoint.iterdir()):
        try:
            if f.suffix == ".safetensors":
                with open(f, "rb") as fh:
                    n = struct.unpack("<Q", fh.read(8))[0]
                    header = json.loads(fh.read(n))
                end = 8 + n + max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
                if f.stat().st_size < end:
                    return f"{f}: cut short ({f.stat().st_size} of {end} bytes)"
            elif f.suffix in (".pt", ".pth", ".bin"):
                zipfile.ZipFile(f).close()
            elif f.suffix == ".json":
                json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError, struct.error, zipfile.BadZipFile) as e:
            return f"{f}: unreadable ({type(e).__name__}: {e})"
    return None


def checkpoint_step(checkpoint: Optional[str]) -> int:
    """The optimiser step of a ``checkpoint-N`` folder; 0 for None (a fresh start)."""
    return int(Path(checkpoint).name.rsplit("-", 1)[-1]) if checkpoint else 0


def forget_logged_after(metrics_path: Path, stage: str, step: int) -> int:
    """Drop ``stage``'s metrics rows logged after ``step`` (the resume point); returns how many."""
    return forget_rows(metrics_path, lambda row: row.get("stage") == stage and int(row.get("step", 0)) > step)


def loss_sum_at(checkpoint: Optional[str]) -> float:
    """The summed per-step loss up to a checkpoint (0.0 for a fresh start)."""
    if checkpoint is None:
        return 0.0
    return float(json.loads((Path(checkpoint) / LOSS_FILE).read_text(encoding="utf-8"))["loss_sum"])


def tokens_at(checkpoint: Optional[str]) -> int:
    """The tokens trained on up to a checkpoint (TRL's ``num_tokens``; 0 for a fresh start or a
    checkpoint written before it was kept)."""
    if checkpoint is None:
        return 0
    return int(json.loads((Path(checkpoint) / LOSS_FILE).read_text(encoding="utf-8")).get("num_tokens", 0))


def stage_loss(resumed_mean: float, resumed_from: int, loss_sum_before: float, global_step: int) -> float:
    """Mean loss over all ``global_step`` steps of a stage, from the Trainer's mean over the steps
    after ``resumed_from`` and the summed loss of the steps before it (a fresh start: the mean as given)."""
    if not resumed_from:
        return resumed_mean
    return (loss_sum_before + resumed_mean * (global_step - resumed_from)) / max(global_step, 1)


class LossTotalCallback(TrainerCallback):
    """Keeps a stage's loss whole across a resume (see the module docstring). ``trainer`` is set
    once the Trainer exists; ``resumed_from`` / ``loss_sum_before`` before ``train()`` resumes.
    Must come before the callbacks that forward logs (it corrects ``train_loss`` in place)."""

    def __init__(self) -> None:
        self.trainer: Any = None
        self.resumed_from = 0
        self.loss_sum_before = 0.0

    def _sum_so_far(self) -> float:
        """The Trainer's own bookkeeping of this invocation (logged sum + the not yet logged part)."""
        t = self.trainer
        pending = getattr(t, "_tr_loss", None)
        pending = float(pending.item()) if hasattr(pending, "item") else float(pending or 0.0)
        return self.loss_sum_before + float(getattr(t, "_total_loss_scalar", 0.0)) + pending

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero and self.trainer is not None:
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            atomic_write_text(ckpt / LOSS_FILE, json.dumps({"step": state.global_step, "loss_sum": self._sum_so_far(),
                                                            "num_tokens": int(getattr(self.trainer, "_total_train_tokens", 0))}))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "train_loss" in logs and self.resumed_from:
            logs["train_loss"] = stage_loss(logs["train_loss"], self.resumed_from, self.loss_sum_before, state.global_step)
