"""The toolken head as a system (``system=toolken system.run=<run>``; systems.py registers it).

It ranks with its own frozen base model and toolken rows, read from a ``head.kind=toolken``
training run (training/toolken.py), so it needs no parametric model beside it
(``parametric=false`` is fine). Both rankings come from one forward pass per query:

- constrained: the tools by toolken score (``ToolkenHead.rank``; the argsort of ``h @ W_tool^T``);
- free-form: the top entries of the joint softmax over vocabulary ∪ toolkens, a vocabulary
  token being "not a tool" (``tool: None``). Rf@k = a gold toolken among the top k of that joint
  list; IS@k = Rf@k / Rc@k keeps its meaning: of the queries the head gets right when it must
  name a tool, the share it also gets right when it may write text instead.

Probes are not applicable (:data:`PROBES`): they read a tool's *input* embedding, and a toolken
is an output row only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Sequence

import torch

from toolsense.catalog import Query
from toolsense.data.prompts import PromptConfig, render_prompt, retrieval_messages
from toolsense.decoding.retrieval import Retrieved
from toolsense.evaluation.fingerprint import checkpoint_sha256
from toolsense.models import ModelConfig, load_model_and_tokenizer
from toolsense.models.toolken import ToolkenHead, answer_states, vocab_rows
from toolsense.utils.errors import ConfigError, MissingFile
from toolsense.utils.rundir import RunDir

STAGE = "toolken"

PROBES = ("not applicable: the MCQ / QA probes feed a tool's row as an input embedding, and a toolken "
          "is an output row only (trained through h @ w at the answer position, never read as an input; "
          "ToolkenGPT switches to a tool mode on emitting one instead of feeding it back), so the "
          "probe would read a vector the model never learnt to read")


def toolken_run(run: str | None) -> RunDir:
    """The training run of ``system.run``, refused naming the field unless it holds a finished head."""
    if not run:
        raise ConfigError("system.kind=toolken needs system.run=<a run trained with train.py experiment=toolken>")
    rd = RunDir(run)
    if not (rd.path / STAGE / "head.pt").exists():
        raise MissingFile(f"system.run={run}: no {STAGE}/head.pt there (train it with "
                                f"python train.py experiment=toolken output_dir={run})")
    return rd


def toolken_identity(run: str | None) -> dict[str, Any]:
    """Who answers (the fingerprint's ``model``), from the run's files without loading it: the
    run's folder name, the head's hash, the base model and the prompts."""
    rd = toolken_run(run)
    return {"run": rd.path.resolve().name, "stage": STAGE, "model": rd.section("model", ModelConfig).name_or_path,
            "checkpoint_sha256": checkpoint_sha256(rd.path / STAGE),
            "prompts": dataclasses.asdict(rd.section("prompts", PromptConfig))}


class ToolkenRanker:
    """Ranks a batch of queries with a trained toolken head (see the module docstring)."""

    free_form = True
    provenance = {"probes": PROBES}

    def __init__(self, run: str, top: int, batch_size: int = 8, device: str | None = None):
        rd = toolken_run(run)
        mcfg = rd.section("model", ModelConfig)
        self.prompts = rd.section("prompts", PromptConfig)
        self.model, self.tok = load_model_and_tokenizer(mcfg, device=device)
        self.model.eval().requires_grad_(False)
        state = torch.load(rd.path / STAGE / "head.pt", map_location="cpu")
        vocab, bias = vocab_rows(self.model, self.tok)
        self.device = next(self.model.parameters()).device
        self.head = ToolkenHead(state["tools"], state["rows"], vocab, bias).to(self.device)  # scored where the LM runs
        self.top, self.batch_size = top, batch_size
        self.known_tools = set(self.head.tools)
        self.source = {"run": str(rd.path), "stage": STAGE, "model": mcfg.name_or_path}

    def run(self, queries: Sequence[Query]) -> Iterator[Retrieved]:
        for start in range(0, len(queries), self.batch_size):
            part = list(queries[start:start + self.batch_size])
            prompts = [render_prompt(self.tok, retrieval_messages(q.text, self.prompts)) for q in part]
            h = answer_states(self.model, self.tok, prompts, self.batch_size).to(self.device)
            for q, p, (cons, free) in zip(part, prompts, self.head.rank(h, self.top, lambda i: self.tok.decode([i]))):
                yield Retrieved(q, p, cons, free)
