"""How a job treats an OpenAI-compatible endpoint (the writer and judge of ``generate.py``, ``baseline=openai``):
its client with the key from the environment only (:class:`Endpoint`), a circuit breaker over connection failures
(:class:`Breaker`), the wait a 429 asks for (:func:`retry_after`), the one-line stop (:class:`EndpointStop`) for an
endpoint that cannot serve the job or refuses its key, and the check of a model name against ``GET /v1/models``."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Callable, Optional, TypeVar

from toolsense.utils.errors import EndpointError
from toolsense.utils.secrets import PLACEHOLDER_KEY, Scrubber, api_key

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


class Endpoint:
    """One endpoint as a job's config section (``writer``, ``judge``, ``baseline``) points at it: ``client`` (an
    ``openai.OpenAI`` without its own retries: :meth:`send` retries), the key from ``$key_env`` (a placeholder for a
    server on loopback or a private network, :func:`~toolsense.utils.secrets.api_key`; ``key`` given: that one), the
    circuit breaker, the one line for a refused key and the error text with the key scrubbed out."""

    def __init__(self, section: str, base_url: Optional[str], key_env: str, max_retries: int, timeout_s: float,
                 max_connection_failures: int, key: Optional[str] = None):
        from openai import OpenAI

        where = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = key or api_key(key_env, where, f"{section}.api_key_env")
        self.client = OpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s)
        self.url, self.section, self.key_env, self.max_retries = str(self.client.base_url), section, key_env, max_retries
        self.key_sent = key != PLACEHOLDER_KEY
        self.breaker = Breaker(max_connection_failures, self.url, f"{section}.max_connection_failures")
        self.scrub = Scrubber([key])

    def short(self, e: Exception, n: int = 200) -> str:
        """The error's text on one line, cut, without this client's key (an endpoint may echo it)."""
        return self.scrub.text(" ".join(str(e).split()))[:n]

    def send(self, create: Callable[[], T], retries: Optional[int] = None) -> T:
        """:func:`send` with this endpoint's retries (or ``retries``) and breaker."""
        return send(create, self.max_retries if retries is None else retries, self.breaker, self.url, lambda e: self.short(e, 80))

    def key_refused(self, e: Any) -> EndpointStop:
        """The one line for a 401 / 403: which ``<section>.api_key_env`` and whether a key was sent."""
        sent = f"the key in ${self.key_env} was sent" if self.key_sent else f"no key was sent (${self.key_env} is unset)"
        return EndpointStop(f"{self.section}.api_key_env={self.key_env!r}: {self.url} refused the request (HTTP "
                            f"{e.status_code}: {self.short(e, 120)}); {sent}. Set ${self.key_env} to a key this "
                            f"endpoint accepts, or point {self.section}.base_url at another")

    def served_model(self, model: str, field: str, check: bool = True) -> Optional[str]:
        """The id ``model`` is served under: ``model`` if ``GET /models`` lists it (``check``; else the first id listed),
        refused naming ``field`` if it lists others (llama.cpp answers any name with its one model). A server that lists
        none, or cannot be asked, is not checked (None); one that refuses the key stops the job here."""
        import openai

        try:
            ids = [m.id for m in self.client.models.list()]
        except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
            raise self.key_refused(e) from None
        except (openai.APIError, ValueError, TypeError, AttributeError):
            return None
        if not ids or not check:
            return ids[0] if ids else None
        if model not in ids:
            shown = ", ".join(repr(i) for i in ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
            raise EndpointError(f"{field}={model!r}: {self.url} does not serve that model (GET /models lists {shown}); "
                                f"set {field} to one of them")
        return model
