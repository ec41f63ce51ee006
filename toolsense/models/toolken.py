"""A tool-embedding head (ToolkenGPT, Hao et al. 2023): a frozen causal LM plus one trainable
output row per tool, a "toolken".

At the answer position the frozen LM's last hidden state ``h`` (after its final norm, the vector
its LM head reads) is scored against the base vocabulary's output rows *and* the toolken rows:
``[h @ W_vocab^T ; h @ W_tool^T]``. Training fits only ``W_tool`` with the cross-entropy of the
joint softmax (the gold tool's toolken is the target), so the base weights never change.

- **constrained** ranking: the tools by toolken logit (log-softmax over the toolkens alone; the
  order is the argsort of ``h @ W_tool^T``);
- **free-form** ranking: the top entries of the log-softmax over vocabulary ∪ toolkens, a
  vocabulary entry standing for "not a tool" (the model would write text instead).

A toolken is an *output* row only: the design never feeds it back as an input (ToolkenGPT
switches to a tool mode when one is emitted), which is why probes that read a tool's input
embedding are not applicable to it (docs/guides/systems.md).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch


@torch.no_grad()
def answer_states(model, tokenizer, prompts: Sequence[str], batch_size: int = 8) -> torch.Tensor:
    """``[len(prompts), hidden]`` float32: the frozen LM's final (normed) hidden state at each
    prompt's last token, the position whose next-token distribution is the answer's. Prompts are
    right-padded in batches; each row is read at its own last real token."""
    if not prompts:
        raise ValueError("answer_states: no prompts")
    dev = next(model.parameters()).device
    out = []
    for start in range(0, len(prompts), batch_size):
        enc = tokenizer(list(prompts[start:start + batch_size]), return_tensors="pt", padding=True,
                        padding_side="right", add_special_tokens=False).to(dev)
        hidden = model.base_model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        last = enc["attention_mask"].sum(1) - 1
        out.append(hidden[torch.arange(hidden.shape[0], device=dev), last].float().cpu())
    return torch.cat(out)


def vocab_rows(model, tokenizer) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The base LM head's rows of the tokenizer's tokens (padding rows past ``len(tokenizer)``
    are no token) and its bias, detached float32 copies: the fixed half of the joint softmax."""
    head = model.get_output_embeddings()
    n = len(tokenizer)
    bias = getattr(head, "bias", None)
    return head.weight.detach()[:n].float().cpu().clone(), (bias.detach()[:n].float().cpu().clone() if bias is not None else None)


@torch.no_grad()
def name_mean_rows(model, tokenizer, names: Sequence[str]) -> torch.Tensor:
    """``[len(names), hidden]``: each tool's initial toolken, the mean of the LM-head rows of its
    name's sub-tokens (as ToolGen's virtual tokens start; index/vocabulary.py)."""
    w = model.get_output_embeddings().weight.detach().float().cpu()
    ids = tokenizer(list(names), add_special_tokens=False)["input_ids"]
    return torch.stack([w[s].mean(0) if s else w[tokenizer.eos_token_id] for s in ids])


class ToolkenHead(torch.nn.Module):
    """The toolken rows (trainable) beside the frozen vocabulary rows. ``tools[i]`` is row i."""

    def __init__(self, tools: Sequence[str], rows: torch.Tensor, vocab: torch.Tensor, vocab_bias: torch.Tensor | None = None):
        super().__init__()
        if rows.shape != (len(tools), vocab.shape[1]):
            raise ValueError(f"toolken rows of shape {tuple(rows.shape)} for {len(tools)} tools of hidden size {vocab.shape[1]}")
        self.tools = list(tools)
        self.rows = torch.nn.Parameter(rows.float().clone())
        self.register_buffer("vocab", vocab.float(), persistent=False)
        self.register_buffer("vocab_bias", vocab_bias.float() if vocab_bias is not None else None, persistent=False)

    @property
    def n_vocab(self) -> int:
        return self.vocab.shape[0]

    def tool_logits(self, h: torch.Tensor) -> torch.Tensor:
        """``[B, n_tools]``: ``h @ W_tool^T``."""
        return h @ self.rows.T

    def joint_logits(self, h: torch.Tensor) -> torch.Tensor:
        """``[B, n_vocab + n_tools]``: the vocabulary's logits, then the toolkens'."""
        v = h @ self.vocab.T
        if self.vocab_bias is not None:
            v = v + self.vocab_bias
        return torch.cat([v, self.tool_logits(h)], dim=1)

    def loss(self, h: torch.Tensor, tool_ids: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the joint softmax with the gold toolken as the target."""
        return torch.nn.functional.cross_entropy(self.joint_logits(h), tool_ids + self.n_vocab)

    @torch.no_grad()
    def rank(self, h: torch.Tensor, top: int, decode: Any = None) -> list[tuple[list[dict], list[dict]]]:
        """Per row of ``h``: ``(constrained, free)`` rankings of ``top`` entries, best first, in the
        Retriever's format. Constrained: tools by log-softmax over the toolkens; free: entries of the
        log-softmax over vocabulary ∪ toolkens, ``tool`` None for a vocabulary token (``text`` is
        ``decode(token id)`` when given)."""
        c = torch.log_softmax(self.tool_logits(h), dim=1)
        f = torch.log_softmax(self.joint_logits(h), dim=1)
        out = []
        for ci, fi in zip(c, f):
            cv, cidx = ci.topk(min(top, ci.numel()))
            fv, fidx = fi.topk(min(top, fi.numel()))
            cons = [{"tool": self.tools[j], "score": float(v), "logprob": float(v)} for v, j in zip(cv.tolist(), cidx.tolist())]
            free = []
            for v, j in zip(fv.tolist(), fidx.tolist()):
                if j >= self.n_vocab:
                    free.append({"tool": self.tools[j - self.n_vocab], "score": float(v), "logprob": float(v)})
                else:
                    free.append({"tool": None, "score": float(v), "logprob": float(v), "text": decode(j) if decode else str(j)})
            out.append((cons, free))
        return out

    def state(self) -> dict[str, Any]:
        """What ``<run>/toolken/head.pt`` holds: the rows and the tool order."""
        return {"tools": self.tools, "rows": self.rows.detach().cpu().clone()}
