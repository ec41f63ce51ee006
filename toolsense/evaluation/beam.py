"""Batched beam search over tool ids, constrained by the trie (tensor masks) or free-form.

Semantics (the same for both modes): every query keeps ``B`` beams; a beam ends when it emits
EOS (or leaves nothing to continue) and is then carried unchanged, so the final beams are the
``B`` best sequences by summed log-probability among those reachable with ``B`` live beams.
Constrained decoding masks every step to the trie's allowed tokens; free-form decoding uses the
same search without the mask. A beam is a *tool* only if its tokens are exactly a tool's id
followed by EOS (it ends on a terminal trie node); anything else is reported as ``None``.

The prompt is encoded once (:func:`prefill`) and both searches start from that state. For flat
indexes :func:`flat_constrained` gives the constrained top-B with one decode step of the B
candidates (the EOS term) — the same ranking as :func:`beam_search`, at a fraction of the cost.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import Sequence

import torch

from toolsense.evaluation.trie_tensors import DEAD, TrieTensors

NEG_INF = float("-inf")
TREE_MAX_STEPS = 8
"""Searches up to this many steps decode beams over the shared prompt cache (tool ids are 1-4
tokens + EOS); longer free-form searches expand the cache per beam."""


@dataclass
class Prefill:
    """The encoded prompts of one batch: last-position log-probs, KV cache, mask."""

    logp: torch.Tensor  # [Q, V] float32
    cache: object
    attention_mask: torch.Tensor  # [Q, L]


@dataclass
class Beams:
    """Final beams of a batch, ranked best first per query."""

    tools: list[list[str | None]]  # per query, per beam: tool name or None (not a tool)
    scores: list[list[float]]  # summed log-probabilities
    sequences: list[list[list[int]]]  # generated token ids (EOS included, padding removed)


def _cache_kw(model) -> str:
    """transformers >= 5.2x names the KV-cache argument ``cache``; older ones ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _log_softmax(logits: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float(), dim=-1)


@torch.no_grad()
def prefill(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Prefill:
    """One forward pass over left-padded prompts, keeping the cache and the last log-probs."""
    pos = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=pos, use_cache=True, logits_to_keep=1)
    cache = out.cache if _cache_kw(model) == "cache" else out.past_key_values
    return Prefill(_log_softmax(out.logits[:, -1]), cache, attention_mask)


def left_pad(seqs: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-id rows right-aligned in one tensor, with their attention mask."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            ids[i, width - len(s):] = torch.as_tensor(s)
            mask[i, width - len(s):] = 1
    return ids.to(device), mask.to(device)


def common_prefix_length(seqs: Sequence[Sequence[int]]) -> int:
    """Tokens every sequence starts with, leaving each at least one token of its own."""
    n = min(len(s) for s in seqs) - 1
    first = seqs[0]
    for i in range(max(n, 0)):
        if any(s[i] != first[i] for s in seqs[1:]):
            return i
    return max(n, 0)


@torch.no_grad()
def prefill_shared(model, prompts: Sequence[Sequence[int]], pad_id: int, device, min_shared: int = 4) -> Prefill:
    """:func:`prefill` of token-id prompts, encoding their common prefix (system prompt, chat
    template) once: the prefix runs as one row, its cache is repeated for every prompt, and the
    rest of each prompt follows it, left-padded — so the pads sit between the prefix and the
    prompt's own tokens, masked out, with positions that continue the prefix. Same log-probs
    as :func:`prefill` up to float rounding (tested). Falls back to :func:`prefill` when the
    prompts share fewer than ``min_shared`` tokens or there is only one."""
    shared = common_prefix_length(prompts) if len(prompts) > 1 else 0
    if shared < min_shared:
        return prefill(model, *left_pad(prompts, pad_id, device))
    head = torch.tensor([list(prompts[0][:shared])], device=device)
    out = model(input_ids=head, position_ids=torch.arange(shared, device=device)[None], use_cache=True, logits_to_keep=1)
    cache = out.cache if _cache_kw(model) == "cache" else out.past_key_values
    cache.batch_repeat_interleave(len(prompts))
    ids, own = left_pad([s[shared:] for s in prompts], pad_id, device)
    mask = torch.cat([own.new_ones(len(prompts), shared), own], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
    out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1,
                **{_cache_kw(model): cache})
    return Prefill(_log_softmax(out.logits[:, -1]), cache, mask)


@torch.no_grad()
def _decode(model, tokens: torch.Tensor, cache, attention_mask: torch.Tensor) -> torch.Tensor:
    """One step: ``tokens`` [N] appended to each row's cache; returns next log-probs [N, V]."""
    pos = attention_mask.sum(-1, keepdim=True) - 1
    out = model(input_ids=tokens[:, None], attention_mask=attention_mask, position_ids=pos,
                use_cache=True, **{_cache_kw(model): cache})
    return _log_softmax(out.logits[:, -1])


def _finish(tt: TrieTensors, nq: int, width: int, scores, nodes, seqs) -> Beams:
    tool_idx = tt.tool_index(nodes).view(nq, width).tolist()
    scores = scores.view(nq, width)
    seqs = seqs.view(nq, width, -1).tolist()
    out = Beams([], [], [])
    for q in range(nq):
        tools, sc, sq = [], [], []
        for b in range(width):
            s = float(scores[q, b])
            if s == NEG_INF:  # fewer than B valid sequences exist
                continue
            tools.append(tt.tools[tool_idx[q][b]] if tool_idx[q][b] >= 0 else None)
            sc.append(s)
            sq.append([t for t in seqs[q][b] if t >= 0])
        out.tools.append(tools)
        out.scores.append(sc)
        out.sequences.append(sq)
    return out


@torch.no_grad()
def beam_search(model, pre: Prefill, tt: TrieTensors, width: int, max_new_tokens: int, constrained: bool,
                share_prompt: bool = True) -> Beams:
    """Beam search of width ``width`` from ``pre`` (its cache is left as it was).
    Ended beams continue with a single zero-cost placeholder step (recorded as -1).

    With ``share_prompt`` (default) every decode step appends the ``Q x B`` current tokens to the
    *shared* prompt cache as new positions, and a 4D mask lets each token see the prompt and its
    own ancestors only (:func:`_decode_tree`): the prompt's keys and values are never copied per
    beam, and the beams' own positions are never reordered (the mask follows each beam's
    lineage). Without it, the cache is expanded to one row per beam and reordered every step
    (the textbook way; kept as the reference the tests compare against). Long searches
    (more than ``TREE_MAX_STEPS`` steps) take the textbook way too: every beam token attends to
    all ``steps x B`` beam positions of the tree, which outgrows the copies it saves."""
    share_prompt = share_prompt and max_new_tokens <= TREE_MAX_STEPS
    nq, vocab = pre.logp.shape
    dev = pre.logp.device
    cache = None if share_prompt else copy.deepcopy(pre.cache)
    mask = pre.attention_mask
    logp = pre.logp
    nodes = torch.zeros(nq, dtype=torch.long, device=dev)
    scores = torch.zeros(nq, device=dev)
    done = torch.zeros(nq, dtype=torch.bool, device=dev)
    seqs = torch.empty(nq, 0, dtype=torch.long, device=dev)
    nb = 1
    see = parent = None  # tree mode: [Q, B, calls*B] which earlier beam positions each beam sees
    calls = 0
    try:
        for step in range(max_new_tokens):
            if step > 0 and share_prompt:
                own = torch.eye(width, dtype=torch.bool, device=dev).expand(nq, width, width)
                see = own if see is None else torch.cat([see.gather(1, parent[:, :, None].expand(-1, -1, see.shape[2])), own], -1)
                logp = _decode_tree(model, seqs[:, -1].clamp(min=0).view(nq, width), pre, see, calls).view(nq * width, vocab)
                calls += 1
            elif step > 0:
                logp = _decode(model, seqs[:, -1].clamp(min=0), cache, mask)
            if constrained:
                logp = logp.masked_fill(~tt.allowed_mask(nodes), NEG_INF)
            if done.any():
                logp[done] = NEG_INF
                logp[done, 0] = 0.0  # the placeholder continuation
            cand = (scores[:, None] + logp).view(nq, nb * vocab)
            vals, idx = cand.topk(min(width, nb * vocab), dim=1)
            if vals.shape[1] < width:  # pad to width with impossible beams
                fill = width - vals.shape[1]
                vals = torch.cat([vals, vals.new_full((nq, fill), NEG_INF)], 1)
                idx = torch.cat([idx, idx[:, :1].expand(nq, fill)], 1)
            parent = idx // vocab  # [Q, B]: the beam (within its query) each new beam extends
            src = (parent + torch.arange(nq, device=dev)[:, None] * nb).view(-1)
            tok = (idx % vocab).view(-1)
            was_done = done[src]
            tok = torch.where(was_done, torch.full_like(tok, -1), tok)
            nodes = torch.where(was_done, nodes[src], tt.advance(nodes[src], tok))
            scores = vals.view(-1)
            done = was_done | (tok == tt.eos_id) | (scores == NEG_INF)
            if constrained:
                done |= nodes == DEAD
            seqs = torch.cat([seqs[src], tok[:, None]], 1)
            nb = width
            if bool(done.all()) or step == max_new_tokens - 1:
                break
            if not share_prompt:
                cache.reorder_cache(src)
                mask = torch.cat([mask[src], mask.new_ones(len(src), 1)], 1)
    finally:
        if calls:
            pre.cache.crop(-calls * width)  # negative: drop the beams' positions (old and new transformers)
    return _finish(tt, nq, nb, scores, nodes, seqs)


@torch.no_grad()
def _decode_tree(model, tokens: torch.Tensor, pre: Prefill, see: torch.Tensor, call: int) -> torch.Tensor:
    """Log-probs [Q, k, V] after ``tokens`` [Q, k], appended to the prompt cache (which may
    already hold ``call`` earlier blocks of k beam positions) in one forward of Q rows. Token j
    of row q sees the prompt and the earlier-or-own beam positions where ``see[q, j]`` is true
    ([Q, k, (call + 1) * k]); all k tokens sit at the same position, ``call`` after the prompt.
    The caller crops the cache back to the prompt."""
    q, k = tokens.shape
    plen = pre.attention_mask.shape[1]
    dtype = next(model.parameters()).dtype
    visible = torch.cat([pre.attention_mask[:, None, :].expand(q, k, plen).bool(), see], -1)
    mask = torch.zeros(q, 1, k, visible.shape[-1], dtype=dtype, device=tokens.device)
    mask.masked_fill_(~visible[:, None], torch.finfo(dtype).min)
    pos = pre.attention_mask.sum(-1, keepdim=True).expand(q, k) + call
    out = model(input_ids=tokens, attention_mask=mask, position_ids=pos, use_cache=True, **{_cache_kw(model): pre.cache})
    return _log_softmax(out.logits)


@torch.no_grad()
def _decode_siblings(model, tokens: torch.Tensor, pre: Prefill) -> torch.Tensor:
    """Log-probs [Q, k, V] after each of ``tokens`` [Q, k] appended *alone* to its row's prompt
    (:func:`_decode_tree` with no earlier beam positions); the cache is cropped back after."""
    k = tokens.shape[1]
    own = torch.eye(k, dtype=torch.bool, device=tokens.device).expand(tokens.shape[0], k, k)
    try:
        return _decode_tree(model, tokens, pre, own, 0)
    finally:
        pre.cache.crop(-k)


@torch.no_grad()
def flat_constrained(model, pre: Prefill, tt: TrieTensors, width: int) -> Beams:
    """Constrained top-``width`` for a flat index (every tool id is one token): rank tool
    tokens by their prefill log-prob, keep the best ``width``, and add the EOS term from one
    forward of those candidates side by side (:func:`_decode_siblings`). Equal to
    :func:`beam_search` with ``constrained=True``."""
    nq = pre.logp.shape[0]
    cand = tt.root_tokens()
    after = tt.advance(torch.zeros_like(cand), cand)
    term = tt.advance(after, torch.full_like(cand, tt.eos_id))
    if bool((term < 0).any()) or bool((tt.tool_index(term) < 0).any()):
        raise ValueError("flat_constrained needs a flat index: every tool id must be one token followed by EOS")
    k = min(width, len(cand))
    vals, pick = pre.logp[:, cand].topk(k, dim=1)
    tok = cand[pick]  # [Q, k]
    eos = _decode_siblings(model, tok, pre)[..., tt.eos_id]
    total = vals + eos
    order = total.argsort(dim=1, descending=True, stable=True)
    total = total.gather(1, order)
    tok = tok.gather(1, order)
    nodes = tt.advance(tt.advance(torch.zeros_like(tok), tok), torch.full_like(tok, tt.eos_id))
    seqs = torch.stack([tok, torch.full_like(tok, tt.eos_id)], -1)
    return _finish(tt, nq, k, total.reshape(-1), nodes.reshape(-1), seqs.reshape(nq * k, 2))
