"""The LM head during the search: logits in fp32 over the real tokens only (:func:`fp32_head`),
with the matmul's input precision a setting (:class:`~toolsense.decoding.config.HeadPrecision`)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

from toolsense.decoding.config import HeadPrecision


def _head_forward(w: torch.Tensor, b: torch.Tensor | None, precision: HeadPrecision | str):
    """The replacement ``forward`` of the LM head: ``x @ w.T (+ b)`` in fp32 out (:class:`HeadPrecision`)."""
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
    :class:`HeadPrecision`) trades the matmul's input precision for speed, never the output's.
    ``n_tokens`` (the tokenizer's length): the rows past it pad the matrix to a multiple of 64
    (``add_index_tokens``) and are no token — they leave the softmax and the free-form search.
    Restores the head's own ``forward`` (or a hook's) on exit."""
    head = model.get_output_embeddings()
    rows = head.weight.shape[0] if head is not None else 0
    n = rows if n_tokens is None else n_tokens
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
