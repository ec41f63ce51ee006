"""Parametric retrieval of a batch of queries: the training prompt, one prefill (the prompts'
common prefix encoded once), then the constrained search (flat fast path or masked beam
search) and the free-form search."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import torch

from toolsense.catalog import Query
from toolsense.data.prompts import PromptConfig, render_prompt, retrieval_messages
from toolsense.decoding.batching import auto_batch_size, is_out_of_memory
from toolsense.decoding.beam import Beams, beam_search, flat_constrained, left_pad, prefill, prefill_shared
from toolsense.decoding.config import DecodingConfig
from toolsense.decoding.head import fp32_head
from toolsense.decoding.trie_tensors import TrieTensors

log = logging.getLogger(__name__)


def encode(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of rendered prompts; the chat template already holds any special tokens."""
    return tokenizer(list(texts), add_special_tokens=False)["input_ids"]


def length_order(lengths: Sequence[int]) -> list[int]:
    """Item positions by prompt length (stable): consecutive items batch with little padding."""
    return sorted(range(len(lengths)), key=lambda i: lengths[i])


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Item positions grouped into batches of similar prompt length (less padding)."""
    order = length_order(lengths)
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def rankings_agree(a: Sequence[dict], b: Sequence[dict], tol: float, key: str = "tool") -> bool:
    """Whether two best-first rankings (``[{tool, score}]``, as ``Retrieved.constrained``) are the
    same up to near-ties: of equal length, scores within ``tol`` rank by rank, and wherever the
    items differ, ``b``'s item scored in ``a`` within ``2 x tol`` of ``a``'s score at that rank (or,
    absent from ``a``, ``a``'s last score was: a near-tie across the beam's cut). Numerics that differ
    (bf16 / TF32 matmuls, another batch shape on a GPU) may swap near-tied items and nothing
    else. ``key``: the field naming an item (``text`` for free-form hypotheses)."""
    if len(a) != len(b):
        return False
    where = {x[key]: x["score"] for x in a}
    for x, y in zip(a, b):
        if abs(x["score"] - y["score"]) > tol:
            return False
        if x[key] != y[key] and abs(where.get(y[key], a[-1]["score"]) - x["score"]) > 2 * tol:
            return False
    return True


@dataclass
class Retrieved:
    query: Query
    prompt: str
    constrained: list[dict]  # [{tool, score, logprob}] best first; score = the ranking score (see beam.py)
    free: list[dict] | None  # [{tool (None if not a tool), score, logprob, text}] best first


MASKED_ATTENTION = ("eager", "sdpa")
"""Attention implementations that read the search's custom 4D float masks (shared-prompt tree
decoding, sibling candidates). flash_attention_* reads any mask as a 2D padding mask."""


def mask_ready(model) -> str:
    """Switch ``model`` to sdpa when its attention implementation cannot take a 4D mask, saying
    so; returns the implementation the search runs under. A run trained under flash attention
    (``padding_free``) reloads with it, and its beam search would otherwise fail or, worse,
    attend across beams; sdpa gives the same scores (attention is exact either way)."""
    impl = getattr(model.config, "_attn_implementation", None) or "eager"
    if impl in MASKED_ATTENTION:
        return impl
    log.warning("beam search: attn_implementation=%s cannot read the search's 4D attention masks; "
                "switching this model to sdpa for retrieval (set model.attn_implementation=sdpa to silence this)", impl)
    model.set_attn_implementation("sdpa")
    return "sdpa"


class Retriever:
    """Parametric retrieval with one model and index; ``run(queries)`` yields in batch order.

    Every search runs with the LM head in fp32 over the tokenizer's real tokens
    (:func:`~toolsense.decoding.head.fp32_head`) and under an attention implementation that
    reads 4D masks (:func:`mask_ready`)."""

    def __init__(self, model, tokenizer, trie, depth: int, prompts: PromptConfig, dec: DecodingConfig):
        self.model, self.tok, self.prompts, self.dec = model, tokenizer, prompts, dec
        self.attn_implementation = mask_ready(model)
        device = next(model.parameters()).device
        self.n_tokens = len(tokenizer)  # the LM head may have padding rows past it (pad_to_multiple_of)
        self.tt = TrieTensors.from_trie(trie, self.n_tokens, device)
        self.depth = depth
        self.device = device
        self.batching: dict[str, Any] = {}
        """What the searches ran at, as provenance (results.json's ``batching``; not the fingerprint): ``batch_size``
        as configured, ``resolved`` (the size ``auto`` picked, or the given one), ``halvings`` (out of memory) and
        ``final`` (the size after them). :meth:`run` fills it; :meth:`new_batching` starts a fresh one."""

    def new_batching(self, world_size: int = 1) -> dict[str, Any]:
        """A fresh :attr:`batching` record, ``world_size`` in it, that the searches after this call fill in place
        (so a results dict holding it, written after them, carries what they ran at)."""
        self.batching = {"world_size": world_size}
        return self.batching

    def prompt(self, query: Query) -> str:
        return render_prompt(self.tok, retrieval_messages(query.text, self.prompts))

    def constrained(self, pre) -> Beams:
        if self.dec.fast_flat and self.depth == 1:
            return flat_constrained(self.model, pre, self.tt, self.dec.beam_width, self.dec.length_penalty)
        return beam_search(self.model, pre, self.tt, self.dec.beam_width, self.depth + 1, constrained=True,
                           length_penalty=self.dec.length_penalty)

    def free(self, pre) -> Beams:
        steps = self.dec.max_new_tokens or self.depth + 1
        return beam_search(self.model, pre, self.tt, self.dec.beam_width, steps, constrained=False,
                           length_penalty=self.dec.length_penalty)

    def batch_size(self, prompt_tokens: int) -> int:
        """``dec.batch_size``, or under ``auto`` the size :func:`auto_batch_size` picks for prompts
        of up to ``prompt_tokens`` tokens on this model's device."""
        if self.dec.batch_size != "auto":
            return int(self.dec.batch_size)
        steps = max(self.dec.max_new_tokens or self.depth + 1, self.depth + 1) if self.dec.free_form else self.depth + 1
        size = auto_batch_size(self.model, self.n_tokens, self.dec.beam_width, prompt_tokens, steps)
        log.info("decoding.batch_size=auto: %d queries per batch on %s", size, self.device)
        return size

    def _search(self, seqs: list[list[int]], pad: int) -> tuple[Beams, Beams | None]:
        with fp32_head(self.model, self.n_tokens, self.dec.head_precision):
            if self.dec.share_prefix:
                pre = prefill_shared(self.model, seqs, pad, self.device)
            else:
                pre = prefill(self.model, *left_pad(seqs, pad, self.device))
            con = self.constrained(pre)
            return con, (self.free(pre) if self.dec.free_form else None)

    def run(self, queries: Sequence[Query]) -> Iterator[Retrieved]:
        """Queries in batches of similar prompt length (less padding). Under ``batch_size=auto`` a
        batch that runs out of GPU memory (cuBLAS's workspace included: ``batching.is_out_of_memory``)
        is run again at half its size (the rest follow at that size)."""
        if not queries:
            return
        prompts = [self.prompt(q) for q in queries]
        ids = encode(self.tok, prompts)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        order = length_order([len(s) for s in ids])
        size, start = self.batch_size(max(len(s) for s in ids)), 0
        record = self.batching
        record.update(batch_size=self.dec.batch_size, resolved=record.get("resolved") or size,
                      halvings=record.get("halvings", 0), final=size)
        while start < len(order):
            batch = order[start : start + size]
            try:
                con, fre = self._search([ids[i] for i in batch], pad)
                out_of_memory = False
            except RuntimeError as e:  # torch.cuda.OutOfMemoryError, or cuBLAS's allocation failures (batching.py)
                if not is_out_of_memory(e) or self.dec.batch_size != "auto" or len(batch) == 1:
                    raise
                out_of_memory = True
            if out_of_memory:  # outside the except block: its traceback no longer holds the batch's tensors
                size = len(batch) // 2
                record.update(halvings=record["halvings"] + 1, final=size)
                log.warning("decoding.batch_size=auto: out of device memory at %d queries; continuing at %d", len(batch), size)
                torch.cuda.empty_cache()
                continue
            start += len(batch)
            for j, i in enumerate(batch):
                c = [{"tool": t, "score": round(s, 5), "logprob": round(lp, 5)}
                     for t, s, lp in zip(con.tools[j], con.scores[j], con.logprobs[j])]
                f = None
                if fre is not None:
                    f = [{"tool": t, "score": round(s, 5), "logprob": round(lp, 5), "text": self.tok.decode(seq)}
                         for t, s, lp, seq in zip(fre.tools[j], fre.scores[j], fre.logprobs[j], fre.sequences[j])]
                yield Retrieved(queries[i], prompts[i], c, f)
