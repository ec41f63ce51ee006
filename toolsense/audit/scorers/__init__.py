"""Scorers behind one interface: local HF causal LM, OpenAI-compatible endpoint, precomputed file."""

from toolsense.audit.scorers import hf, openai_api, precomputed  # noqa: F401  (registration)
from toolsense.audit.scorers.base import SCORERS, ScoreCache, ScoreItem, ScorerConfig, cache_key, messages_sha256

__all__ = ["SCORERS", "ScoreCache", "ScoreItem", "ScorerConfig", "cache_key", "messages_sha256", "build_scorer"]


def build_scorer(cfg: ScorerConfig, model_cfg=None):
    return SCORERS.get(cfg.kind)(cfg, model_cfg)
