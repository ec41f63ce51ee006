"""Scorers behind one interface: local HF causal LM, OpenAI-compatible endpoint, precomputed file."""

from toolsense.audit.scorers import openai_api, precomputed  # noqa: F401  (registration)
from toolsense.audit.scorers.base import SCORERS, ScoreCache, ScoreItem, ScorerConfig, cache_key, messages_sha256

__all__ = ["SCORERS", "ScoreCache", "ScoreItem", "ScorerConfig", "cache_key", "messages_sha256", "build_scorer"]


def build_scorer(cfg: ScorerConfig, model_cfg=None, prompt=None):
    """The registered scorer for ``cfg.kind``; ``prompt`` (an AuditPromptConfig) tells the hf
    answer_probs method which answer format to read."""
    return SCORERS.get(cfg.kind)(cfg, model_cfg, prompt)


@SCORERS.register("hf")
def _hf(cfg: ScorerConfig, model_cfg=None, prompt=None):
    """A local HF causal LM (``hf.py``), imported when one is built: torch loads with it, not with the config."""
    from toolsense.audit.scorers.hf import HFScorer

    return HFScorer(cfg, model_cfg, prompt)
