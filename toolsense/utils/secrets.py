"""API keys: where a run gets one, and keeping every known secret out of what a run writes.

A key comes only from the environment: a config names the *variable* (``api_key_env``), never
the value. A server on this machine or a private network (llama.cpp, vLLM, Ollama, LM Studio
started without ``--api-key``) needs none, so :func:`api_key` gives such a server a placeholder
when the variable is unset (:func:`is_local_url` is the rule) and refuses, naming the
variable, only where a key is really needed.

An endpoint may echo the key it was sent in an error body ("Incorrect API key provided:
sk-...", or the whole request with its ``Authorization: Bearer ...`` header). Such text
reaches rejection rows, summaries (even as a dict key), data cards, logs and trackers unless it
is scrubbed where it is written: :class:`Scrubber` is that one function, and
:func:`scrubbed_logs` applies it to every log record while a job runs, and :func:`scrubbed_errors`
to the error a job dies of (Hydra prints it, a Slurm log keeps it).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import traceback
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Optional
from urllib.parse import urlsplit

from toolsense.utils.errors import ConfigError, UserError

PLACEHOLDER_KEY = "no-key"
"""Sent to a local server when the key variable is unset (a server without ``--api-key`` ignores it)."""

SECRET_ENV = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)", re.I)
"""Environment variables whose values are scrubbed besides the configured ``api_key_env`` ones
(OPENAI_API_KEY, WANDB_API_KEY, HF_TOKEN, ...)."""

MIN_SECRET_LEN = 8
"""Shorter values are not scrubbed: they cannot be told from ordinary words ("1", "true")."""

_TOKEN = r"(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}"
_SHAPED = re.compile(rf"(?i)\bbearer\s+{_TOKEN}|\b(?:sk-|hf_){_TOKEN}")
"""Key-shaped text, whatever its value: ``Bearer <token>``, ``sk-...`` (OpenAI, and most
OpenAI-compatible services), ``hf_...`` (Hugging Face), where the token has 16+ characters and
a digit — so prose such as "Bearer authentication" in a tool's description is left alone."""

MASK = "***"


def is_local_url(url: Optional[str]) -> bool:
    """Whether ``url``'s host is this machine or a private network, where a server needs no key:
    ``localhost`` (and ``*.localhost``), a loopback (127.0.0.0/8, ::1), private (10/8,
    172.16/12, 192.168/16, fc00::/7) or link-local address, or a one-label host name (a
    container or cluster node: ``vllm``, ``gpu07``). Anything else (a dotted name such as
    api.openai.com, a public address) needs a key."""
    if not url:
        return False
    host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host
    return ip.is_loopback or ip.is_private or ip.is_link_local


def api_key(env_name: str, base_url: Optional[str], field: Optional[str]) -> str:
    """The key in ``$env_name``; a :data:`PLACEHOLDER_KEY` when that is unset and ``base_url`` is
    local (:func:`is_local_url`); otherwise a ConfigError naming ``field`` (the config's dotted
    name of the variable setting; None where the variable is fixed) and the variable."""
    key = os.environ.get(env_name)
    if key:
        return key
    if is_local_url(base_url):
        return PLACEHOLDER_KEY
    named = f"{field}={env_name!r}" if field else env_name
    raise ConfigError(f"{named}: set that environment variable to the API key of {base_url or 'the default endpoint'} "
                       "(only a server on loopback or a private network is spoken to without one)")


class Scrubber:
    """Replaces every known secret in text by ``***``: the given values (at least
    :data:`MIN_SECRET_LEN` characters) and key-shaped text (:data:`_SHAPED`). Called on a
    string, dict (keys too), list or tuple, it returns a scrubbed copy; other values pass."""

    def __init__(self, secrets: Iterable[str] = ()):
        values = {s for s in secrets if s and len(s) >= MIN_SECRET_LEN}
        self._values = re.compile("|".join(re.escape(s) for s in sorted(values, key=len, reverse=True))) if values else None

    @classmethod
    def from_env(cls, names: Iterable[str] = (), environ: Optional[Mapping[str, str]] = None) -> "Scrubber":
        """The values of ``names`` (the configured ``api_key_env`` variables) and of every
        variable whose name looks secret (:data:`SECRET_ENV`)."""
        env = os.environ if environ is None else environ
        wanted = set(names) | {k for k in env if SECRET_ENV.search(k)}
        return cls(env[k] for k in wanted if env.get(k))

    def text(self, s: str) -> str:
        if self._values is not None:
            s = self._values.sub(MASK, s)
        return _SHAPED.sub(lambda m: m.group(0).split()[0] + " " + MASK if m.group(0).lower().startswith("bearer") else MASK, s)

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self(k): self(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self(v) for v in obj)
        return obj


class _ScrubRecords(logging.Filter):
    def __init__(self, scrub: Scrubber):
        super().__init__()
        self.scrub = scrub

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: keep what logging would have shown, scrubbed
            message = f"{record.msg} {record.args}"
        record.msg, record.args = self.scrub.text(message), None
        if record.exc_info:
            record.exc_text = self.scrub.text(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


@contextmanager
def scrubbed_logs(scrub: Scrubber) -> Iterator[None]:
    """Every record that reaches a handler of the root logger (the console, Hydra's
    ``<job>.log``) is scrubbed while the block runs; the filters are removed after it."""
    handlers = list(logging.getLogger().handlers)
    f = _ScrubRecords(scrub)
    for h in handlers:
        h.addFilter(f)
    try:
        yield
    finally:
        for h in handlers:
            h.removeFilter(f)


@contextmanager
def scrubbed_errors(scrub: Scrubber) -> Iterator[None]:
    """An exception that escapes the block and holds a secret anywhere in its traceback (its
    message, a chained cause: an endpoint's error body echoing the key) is logged with the
    traceback scrubbed and replaced by a ``RuntimeError`` of its scrubbed ``Type: message``, raised
    ``from None`` so that no report prints the original; a :class:`UserError` keeps its type with its
    message scrubbed (the job prints it as one line). One with nothing to scrub is re-raised
    unchanged (its type is part of what callers and tests see)."""
    try:
        yield
    except Exception as e:
        text = "".join(traceback.format_exception(e))
        clean = scrub.text(text)
        if clean == text:
            raise
        if isinstance(e, UserError):  # still the user's to fix: one line, its type kept (exit 2)
            raise type(e)(scrub.text(str(e))) from None
        logging.getLogger(__name__).error("the job failed (secrets scrubbed from its traceback):\n%s", clean)
        raise RuntimeError(scrub.text(f"{type(e).__name__}: {e}")) from None


@contextmanager
def scrubbed_job(key_envs: Iterable[str] = ()) -> Iterator[Scrubber]:
    """:func:`scrubbed_logs` and :func:`scrubbed_errors` with the scrubber of ``key_envs`` and every
    secret-looking environment variable: a job entry point's one line."""
    scrub = Scrubber.from_env(key_envs)
    with scrubbed_logs(scrub), scrubbed_errors(scrub):
        yield scrub
