"""Score with any OpenAI-compatible chat-completions endpoint (vLLM, TGI, a hosted API).

The API key is read from the environment variable *named* by ``scorer.api_key_env``; it is
never part of the config, the cache key, the logs or the results. A server on loopback or a
private network needs none: with the variable unset it is sent a placeholder
(:func:`toolsense.utils.secrets.api_key`)."""

from __future__ import annotations

from tqdm.auto import tqdm

from toolsense.audit.scorers.base import SCORERS, ScoreItem, ScorerConfig
from toolsense.utils.secrets import api_key


class OpenAIScorer:
    def __init__(self, cfg: ScorerConfig):
        import openai

        key = api_key(cfg.api_key_env, cfg.base_url, "scorer.api_key_env")
        self.client = openai.OpenAI(base_url=cfg.base_url, api_key=key, timeout=cfg.timeout_s, max_retries=cfg.max_retries)
        self.model = cfg.model
        self.identity = {"kind": "openai", "base_url": cfg.base_url, "model": cfg.model}
        self.decoding = {"temperature": 0.0, "max_tokens": cfg.max_new_tokens}

    def answer(self, items: list[ScoreItem]) -> list[str | None]:
        out = []
        for it in tqdm(items, desc="endpoint", leave=False):
            resp = self.client.chat.completions.create(model=self.model, messages=it.messages, **self.decoding)
            out.append(resp.choices[0].message.content if resp.choices else None)
        return out


@SCORERS.register("openai")
def _openai(cfg: ScorerConfig, model_cfg=None, prompt=None) -> OpenAIScorer:
    return OpenAIScorer(cfg)
