"""The LM head during the search: logits in fp32 over the real tokens only (:func:`fp32_head`),
with the matmul's input precision a setting (:class:`~toolsense.decoding.config.HeadPrecision`),
and one token's log-probability read through it a slice of the vocabulary at a time (:func:`token_logprob`)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

from toolsense.decoding.config import HeadPrecision

VOCAB_SLICE = 8192
"""Rows of the LM head :func:`token_logprob` multiplies at once: its logits peak at ``N x VOCAB_SLICE``
fp32 values (N = the hidden states read: 50 beams x 128 queries, 210 MB) where the whole vocabulary
(175k rows on Llama-3-8B with ToolBench's tokens) would take 4.5 GB."""


def _head_forward(w: torch.Tensor, b: torch.Tensor | None, precision: HeadPrecision | str):
    """The replacement ``forward`` of the LM head: ``x @ w.T (+ b)`` in fp32 out (:class:`HeadPrecision`);
    it carries ``(w, b, precision)`` as ``head_parts`` for :func:`token_logprob`."""
    forward = _matmul(w, b, str(precision))
    forward.head_parts = (w, b, str(precision))
    return forward


def _matmul(w: torch.Tensor, b: torch.Tensor | None, precision: str):
    """``x -> x @ w.T (+ b)`` in fp32 out, with the inputs' precision of :class:`HeadPrecision`."""
    if precision == "bf16":
        upcast: list[torch.Tensor] = []  # the fp32 head, made once, where out_dtype is not supported

        def forward(x: torch.Tensor) -> torch.Tensor:
            flat = x.to(w.device, torch.bfloat16).reshape(-1, x.shape[-1])
            out = None
            if not upcast:
                try:
                    out = torch.mm(flat, w.T, out_dtype=torch.float32)  # CUDA (torch >= 2.8): fp32 accumulation, fp32 out
                except (NotImplementedError, TypeError):  # a CPU, or an older torch: the same products upcast
                    upcast.append(w.float().T)
            if out is None:
                out = flat.float() @ upcast[0]
            out = out if b is None else out + b
            return out.reshape(*x.shape[:-1], w.shape[0])
        return forward
    if precision == "tf32":
        def forward(x: torch.Tensor) -> torch.Tensor:
            matmul = torch.backends.cuda.matmul
            old, matmul.allow_tf32 = matmul.allow_tf32, True
            try:
                return torch.nn.functional.linear(x.to(w.device, torch.float32), w, b)
            finally:
                matmul.allow_tf32 = old
        return forward
    return lambda x: torch.nn.functional.linear(x.to(w.device, torch.float32), w, b)


@contextmanager
def fp32_head(model, n_tokens: int | None = None,
              precision: HeadPrecision | str = HeadPrecision.fp32) -> Iterator[None]:
    """Within the block the LM head computes logits in fp32, over the first ``n_tokens`` rows only.

    fp32: bf16 logits have 8 bits of mantissa (spacing 0.125 at 20), so among 47k tool tokens
    the top-50 cut of a beam falls inside runs of exactly tied scores; upcasting after the head
    does not undo the rounding. The head's fp32 copy costs 4 bytes x rows x hidden while the
    block runs (2.9 GB for an 8B model with ToolBench's tokens); ``precision`` (a
    :class:`HeadPrecision`; ``auto``: tf32 on CUDA, fp32 elsewhere) trades the matmul's input precision for
    speed, never the output's.
    ``n_tokens`` (the tokenizer's length): the rows past it pad the matrix to a multiple of 64
    (``add_index_tokens``) and are no token — they leave the softmax and the free-form search.
    Restores the head's own ``forward`` (or a hook's) on exit."""
    head = model.get_output_embeddings()
    rows = head.weight.shape[0] if head is not None else 0
    n = rows if n_tokens is None else n_tokens
    if head is not None:
        precision = HeadPrecision(precision).resolve(head.weight.device.type)  # auto: tf32 on CUDA, else fp32
    if head is None or (head.weight.dtype == torch.float32 and n == rows and precision == "fp32"):
        yield
        return
    if n > rows:
        raise ValueError(f"fp32_head: {n} tokens but the LM head has only {rows} rows")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    w = head.weight.detach()[:n].to(dtype)
    b = head.bias.detach()[:n].float() if getattr(head, "bias", None) is not None else None
    own = head.__dict__.get("forward")  # an accelerate hook's wrapper, or None (the class's)
    head.forward = _head_forward(w, b, str(precision))
    try:
        yield
    finally:
        del head.forward
        if own is not None:
            head.forward = own


def token_logprob(model, hidden: torch.Tensor, token: int, n_tokens: int | None = None,
                  rows: int | None = None) -> torch.Tensor:
    """log p(``token``) ``[...]`` after the last hidden states ``hidden`` ``[..., H]``: the token's logit less
    the log-sum-exp of all of them, the head multiplied ``rows`` of its rows at a time (:data:`VOCAB_SLICE`),
    so no ``[..., V]`` logits are ever held. Inside :func:`fp32_head` it multiplies as the head does there
    (its precision, its first ``n_tokens`` rows); elsewhere in fp32 over ``n_tokens`` rows (default: all).
    Equal to ``log_softmax(head(hidden))[..., token]`` up to fp32 rounding of the sum's order (tested)."""
    head = model.get_output_embeddings()
    w, b, precision = getattr(head.forward, "head_parts", None) or (head.weight.detach(), getattr(head, "bias", None), "fp32")
    n = w.shape[0] if n_tokens is None else min(n_tokens, w.shape[0])
    rows = rows or VOCAB_SLICE

    def logits(start: int, stop: int) -> torch.Tensor:  # rows start:stop of the head, as fp32 logits
        ws, bs = w[start:stop], None if b is None else b[start:stop].float()
        return _matmul(ws if precision == "bf16" else ws.float(), bs, precision)(hidden)

    lse = None
    for start in range(0, n, rows):
        part = torch.logsumexp(logits(start, min(start + rows, n)), -1)
        lse = part if lse is None else torch.logaddexp(lse, part)
    return logits(token, token + 1)[..., 0] - lse
