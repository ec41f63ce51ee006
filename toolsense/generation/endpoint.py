"""How the openai backend treats an endpoint that cannot serve a job: a circuit breaker over connection failures
(:class:`Breaker`), the wait a 429 asks for (:func:`retry_after`) and the one-line stop (:class:`EndpointStop`)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, TypeVar

from toolsense.utils.errors import EndpointError

log = logging.getLogger(__name__)
T = TypeVar("T")


class EndpointStop(EndpointError):
    """The endpoint cannot serve this job at all (unreachable, or it refuses the key): the job stops with
    this one line (a user error: exit 2) and every item not yet made is left for a rerun."""


class Breaker:
    """Counts requests in a row that could not reach the endpoint (connection refused, reset, timed out);
    at ``limit`` it opens: that request and every later one raise :class:`EndpointStop` at once, so a
    dead endpoint costs seconds, not every item's retries. Any answer from the endpoint resets it. Thread-safe."""

    def __init__(self, limit: int, url: str, field: str = "llm.max_connection_failures"):
        self.limit, self.url, self.field, self.failures, self.opened = limit, url, field, 0, None
        self._lock = threading.Lock()

    def check(self) -> None:
        if self.opened:
            raise EndpointStop(self.opened)

    def failed(self, error: str) -> None:
        with self._lock:
            self.failures += 1
            if self.failures >= self.limit and not self.opened:
                self.opened = (f"{self.url} could not be reached {self.failures} times in a row (last: {error}); stopped, the "
                               f"remaining items are left for a rerun ({self.field}={self.limit})")
        self.check()

    def answered(self) -> None:
        with self._lock:
            self.failures = 0


def retry_after(response, default: float, cap: float = 300.0) -> float:
    """Seconds a 429 asks to wait: its ``retry-after-ms`` or ``retry-after`` header (seconds or an HTTP date),
    at most ``cap``; ``default`` where it gives none."""
    import email.utils

    headers = getattr(response, "headers", None) or {}
    try:
        if headers.get("retry-after-ms"):
            return min(float(headers["retry-after-ms"]) / 1000, cap)
        value = headers.get("retry-after")
        if value is None:
            return default
        try:
            return min(max(float(value), 0.0), cap)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value).timestamp()
            return min(max(when - time.time(), 0.0), cap)
    except (TypeError, ValueError):
        return default


def send(create: Callable[[], T], retries: int, breaker: Breaker, url: str, short: Callable[[Exception], str]) -> T:
    """``create()`` (one request) with up to ``retries`` retries of a transient failure: a 429 after the wait its
    ``Retry-After`` asks (:func:`retry_after`), a 5xx or a connection failure after an exponential back-off (0.5 s
    doubling, at most 8 s). Connection failures count towards ``breaker``; the last failure is raised as the
    client raised it."""
    import openai

    for attempt in range(retries + 1):
        breaker.check()
        wait = min(0.5 * 2 ** attempt, 8.0)
        try:
            reply = create()
        except openai.APIConnectionError as e:  # time-outs too
            breaker.failed(short(e))
            if attempt == retries:
                raise
        except (openai.RateLimitError, openai.InternalServerError) as e:
            breaker.answered()
            if attempt == retries:
                raise
            if e.status_code == 429:
                wait = retry_after(e.response, wait)
                log.info("%s: HTTP 429, retrying in %.1f s (Retry-After)", url, wait)
        else:
            breaker.answered()
            return reply
        time.sleep(wait)
    raise AssertionError("unreachable")  # the last attempt returns or raises
