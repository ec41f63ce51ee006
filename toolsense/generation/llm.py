"""Chat LLM backends behind one call: ``llm(messages) -> str``.

``hf``: a local causal LM (any ModelConfig, default the embedded SmolLM2); ``openai``: any
OpenAI-compatible endpoint, the API key read from the environment variable named in config and
never stored. :class:`CachedLLM` memoises replies on disk (JSONL, appended as they come), so an
interrupted generation resumes without paying for the same call twice.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Protocol

from toolsense.models.config import ModelConfig
from toolsense.utils.choices import StrEnum
from toolsense.utils.io import sha256_text


class Backend(StrEnum):
    hf = "hf"
    openai = "openai"


class ChatLLM(Protocol):
    name: str

    def __call__(self, messages: list[dict], *, temperature: float = 0.0, max_new_tokens: int = 256, seed: int = 0) -> str: ...


@dataclass
class LLMConfig:
    backend: Backend = Backend.hf
    model: ModelConfig = field(default_factory=ModelConfig)
    """hf backend: the local model."""
    openai_model: str = "gpt-4o-mini"
    """openai backend: the model name sent to the endpoint."""
    base_url: Optional[str] = None
    """openai backend: endpoint URL (None = the client's default / OPENAI_BASE_URL)."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai backend: NAME of the environment variable holding the key (the key itself never goes in config)."""
    max_retries: int = 6
    """openai backend: retries with exponential back-off on rate limits and server errors."""
    temperature: float = 0.7
    max_new_tokens: int = 256


class HFChatLLM:
    def __init__(self, cfg: ModelConfig):
        import torch

        from toolsense.models import load_model_and_tokenizer

        self.model, self.tok = load_model_and_tokenizer(cfg)
        self.model.eval()
        self.name = f"hf:{cfg.name_or_path}"
        self._torch = torch

    def __call__(self, messages, *, temperature=0.0, max_new_tokens=256, seed=0):
        torch = self._torch
        ids = self.tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        torch.manual_seed(seed)
        with torch.no_grad():
            out = self.model.generate(
                **ids, max_new_tokens=max_new_tokens, do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None, top_p=0.95 if temperature > 0 else None,
                eos_token_id=self.tok.eos_token_id, pad_token_id=self.tok.pad_token_id,
            )
        return self.tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True).strip()


class OpenAIChatLLM:
    def __init__(self, model: str, base_url: str | None, api_key_env: str, max_retries: int = 6):
        from openai import OpenAI

        key = os.environ.get(api_key_env)
        if not key:
            raise RuntimeError(f"llm.api_key_env={api_key_env!r}: set that environment variable to the API key")
        self.client = OpenAI(api_key=key, base_url=base_url, max_retries=max_retries)
        self.model = model
        self.name = f"openai:{model}@{base_url or 'default'}"

    def __call__(self, messages, *, temperature=0.0, max_new_tokens=256, seed=0):
        r = self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=temperature, max_tokens=max_new_tokens, seed=seed
        )
        return (r.choices[0].message.content or "").strip()


class CachedLLM:
    """Disk cache in front of a backend, keyed by (backend name, messages, decoding params).
    Thread-safe: concurrent calls (``concurrency`` > 1) append whole lines under a lock."""

    def __init__(self, inner: ChatLLM, path: str | Path):
        self.inner, self.path, self.name = inner, Path(path), inner.name
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self._cache[row["key"]] = row["reply"]
        self.hits = 0

    def __call__(self, messages, *, temperature=0.0, max_new_tokens=256, seed=0):
        key = sha256_text(json.dumps([self.name, messages, temperature, max_new_tokens, seed], sort_keys=True))
        if key in self._cache:
            self.hits += 1
            return self._cache[key]
        reply = self.inner(messages, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
        with self._lock:
            self._cache[key] = reply
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "reply": reply}, ensure_ascii=False) + "\n")
        return reply


def build_llm(cfg: LLMConfig) -> ChatLLM:
    if cfg.backend == "hf":
        return HFChatLLM(cfg.model)
    if cfg.backend == "openai":
        return OpenAIChatLLM(cfg.openai_model, cfg.base_url, cfg.api_key_env, cfg.max_retries)
    raise ValueError(f"llm.backend must be 'hf' or 'openai', got {cfg.backend!r}")


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
