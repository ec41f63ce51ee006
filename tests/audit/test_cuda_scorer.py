"""The audit's HF scorer on a CUDA device (``pytest -m gpu``; skipped with the reason elsewhere):
the model is loaded onto the GPU and every batch follows it; scores equal a CPU fp32 run's."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_answer_probs_scorer_runs_on_the_gpu(demo_traces, monkeypatch):
    from toolsense.audit.prompting import AuditPromptConfig, build_messages
    from toolsense.audit.scorers import ScoreItem, ScorerConfig, build_scorer
    from toolsense.models import ModelConfig

    mc = ModelConfig("tiny_random", dtype="float32", eos_token="<|im_end|>")
    items = [ScoreItem(r.id, "original", build_messages(r, AuditPromptConfig())) for r in demo_traces.records[:6]]
    gpu = build_scorer(ScorerConfig(kind="hf", method="answer_probs", batch_size=3), mc, AuditPromptConfig())
    assert gpu.model.device.type == "cuda"
    on_gpu = gpu.answer(items)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = build_scorer(ScorerConfig(kind="hf", method="answer_probs", batch_size=3), mc, AuditPromptConfig())
    assert cpu.model.device.type == "cpu"
    assert on_gpu == pytest.approx(cpu.answer(items), abs=1e-4)
