"""One progress bar for every long loop: tqdm on stderr, quiet for small loops and when
``TOOLSENSE_PROGRESS=0``, and sparse (one refresh every few seconds) when stderr is a file."""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from typing import Iterable, Iterator, Optional, TypeVar

from tqdm import tqdm

T = TypeVar("T")

LOG_INTERVAL_S = 5.0
"""Seconds between refreshes when stderr is not a terminal: a log file gets a line every 5 s."""


def progress(iterable: Optional[Iterable[T]] = None, *, desc: str, total: Optional[int] = None, unit: str = "it",
             min_total: int = 0, show: bool = True, **kwargs) -> tqdm:
    """``tqdm(iterable, desc=..., total=...)`` with the house defaults.

    ``min_total``: loops known to be shorter than this stay silent (tests and the demo catalog
    are not cluttered with bars for 100 items). ``total`` defaults to ``len(iterable)`` when it
    has one. ``show=False`` silences this bar (e.g. a small file); ``TOOLSENSE_PROGRESS=0``
    turns every bar off.
    """
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    off = not show or os.environ.get("TOOLSENSE_PROGRESS", "1") == "0" or (total is not None and total < min_total)
    if not sys.stderr.isatty():
        kwargs.setdefault("mininterval", LOG_INTERVAL_S)
    return tqdm(iterable, desc=desc, total=total, unit=unit, disable=off, dynamic_ncols=True, **kwargs)


@contextmanager
def heartbeat(bar: tqdm, every_s: float = LOG_INTERVAL_S) -> Iterator[tqdm]:
    """Redraw ``bar`` every ``every_s`` seconds while the body runs, from a background thread.

    For loops whose single items take long (a batch of beam searches over a 47k-token
    vocabulary on CPU): the bar's elapsed time keeps moving between updates, so a log never
    goes silent for longer than ``every_s``. A disabled bar stays silent."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every_s):
            bar.refresh()

    thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
    thread.start()
    try:
        yield bar
    finally:
        stop.set()
        thread.join()
