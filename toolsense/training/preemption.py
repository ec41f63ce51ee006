"""Preemption-safe training: a job's signal stops a stage at the end of a step, with a checkpoint.

Slurm ends a job with a signal: submitit's USR2 ``signal_delay_s`` before the time limit (and on
``scancel --signal=USR2``), a bare SIGTERM on ``scancel``, at a time limit without ``--signal``, or when
the job is preempted (``PreemptMode=REQUEUE``: SIGTERM, then SIGKILL after ``GraceTime``). While a stage
trains (:func:`preemptible`), either signal only sets a flag. At the end of every optimizer step all
ranks agree on it (an all_reduce, so a rank the signal reached late stops at the same step), the
Trainer saves a checkpoint and stops, and only then is the job handed over (:meth:`StopFlag.hand_over`):

- USR2 under submitit: submitit's own handler runs (on rank 0 it calls the launcher's ``checkpoint()``,
  requeues the job with ``scontrol requeue`` and exits; the other ranks wait to be ended by the requeue);
- otherwise (SIGTERM, or no submitit): :class:`Preempted` is raised, the job ends with an error naming
  the checkpoint, and rerunning the same command (or Slurm's own requeue) resumes from it.

The resumed stage starts at the saved step with the saved optimizer, scheduler, RNG and data position,
so its weights equal an uninterrupted run's, and ``training/resume.py`` counts each step once."""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from typing import Any, Iterator

from transformers import TrainerCallback

from toolsense.utils.ranks import rank, world_size

log = logging.getLogger(__name__)

PRIORITY = {signal.SIGTERM: 1, signal.SIGUSR2: 2}
"""Signals caught while a stage trains; when ranks saw different ones, the higher wins (USR2: requeue)."""
REQUEUE_WAIT_S = 120
"""How long a rank other than 0 waits, after the checkpoint, for rank 0's requeue to end the job."""


class Preempted(RuntimeError):
    """A stage stopped on a signal after saving its checkpoint: rerun the same command to resume."""


class StopFlag:
    """The signal this process caught (0 = none) and, once the ranks agreed, the one they stop on."""

    def __init__(self) -> None:
        self.caught = 0
        self.agreed = 0
        self.previous: dict[int, Any] = {}

    def catch(self, signum: int, frame: Any = None) -> None:
        if PRIORITY.get(signum, 0) > PRIORITY.get(self.caught, 0):
            self.caught = signum
        log.warning("caught %s: training stops after this step, with a checkpoint", signal.Signals(signum).name)

    def agree(self) -> int:
        """The signal all ranks stop on (the highest caught by any rank; 0 = none): one all_reduce
        per call, so every rank must call it at the same point (the end of each step)."""
        value = PRIORITY.get(self.caught, 0)
        if world_size() > 1:
            import torch

            if torch.distributed.is_initialized():
                device = f"cuda:{torch.cuda.current_device()}" if torch.distributed.get_backend() == "nccl" else "cpu"
                t = torch.tensor([value], device=device)
                torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
                value = int(t.item())
        self.agreed = next((s for s, p in PRIORITY.items() if p == value), 0)
        return self.agreed

    def hand_over(self, what: str) -> None:
        """After the checkpoint: submitit's USR2 handler (requeue) where it installed one, else raise
        :class:`Preempted` naming ``what`` was saved."""
        name = signal.Signals(self.agreed).name
        previous = self.previous.get(self.agreed)
        if self.agreed == signal.SIGUSR2 and _is_submitit(previous):
            log.warning("%s; handing the %s over to submitit (requeue)", what, name)
            previous(self.agreed, None)  # rank 0: checkpoint(), scontrol requeue, exit; other ranks: returns
            if rank() != 0:
                time.sleep(REQUEUE_WAIT_S)  # rank 0's requeue ends this process; exiting first could end the job
        raise Preempted(f"stopped on {name}: {what}; rerun the same command to resume from it")


def _is_submitit(handler: Any) -> bool:
    return callable(handler) and type(getattr(handler, "__self__", None)).__module__.startswith("submitit")


@contextlib.contextmanager
def preemptible() -> Iterator[StopFlag]:
    """While the block runs, USR2 and SIGTERM set the yielded flag instead of ending the process
    (submitit's handlers and the defaults are put back after, and kept for :meth:`StopFlag.hand_over`)."""
    flag = StopFlag()
    for signum in PRIORITY:
        flag.previous[signum] = signal.signal(signum, flag.catch)
    try:
        yield flag
    finally:
        for signum, handler in flag.previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


class StopOnSignal(TrainerCallback):
    """At the end of each optimizer step: when the ranks agree a signal came, save a checkpoint and stop."""

    def __init__(self, flag: StopFlag) -> None:
        self.flag = flag
        self.stopped_at = 0

    def on_step_end(self, args, state, control, **kwargs):
        if self.flag.agree():
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at = state.global_step
        return control


__all__ = ["Preempted", "StopFlag", "StopOnSignal", "preemptible"]
