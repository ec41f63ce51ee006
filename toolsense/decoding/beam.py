"""Batched beam search over tool ids, constrained by the trie (tensor masks) or free-form.

Semantics (the same for both modes) are Hugging Face's ``generate(num_beams=B,
num_return_sequences=B)``: every query keeps ``B`` live beams; a continuation that emits EOS (or
reaches the step limit) becomes a finished hypothesis ranked by its summed log-probability
divided by ``generated_length ** length_penalty`` (EOS counted, prompt not; 1.0 as in HF, 0.0 =
the plain sum), and the ``B`` best hypotheses are returned. Variable-depth (clustered) indexes
are where the penalty matters: it favours longer ids over shorter ones of equal probability.
Constrained decoding masks every step to the trie's allowed tokens; free-form decoding uses the
same search without the mask. A hypothesis is a *tool* only if its tokens are exactly a tool's
id followed by EOS (it ends on a terminal trie node); anything else is reported as ``None``.

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

from toolsense.decoding.head import token_logprob
from toolsense.decoding.trie_tensors import DEAD, TrieTensors

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
    """Final hypotheses of a batch, ranked best first per query."""

    tools: list[list[str | None]]  # per query, per hypothesis: tool name or None (not a tool)
    scores: list[list[float]]  # the ranking score: logprob / generated_length ** length_penalty
    logprobs: list[list[float]]  # summed log-probabilities
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


def _length_norm(step: int, length_penalty: float) -> float:
    """HF's divisor of a hypothesis finished at 0-based ``step``: its generated length (EOS
    included, prompt excluded) to the power ``length_penalty``."""
    return float(step + 1) ** length_penalty


@dataclass
class _Finished:
    """Each query's best ``width`` finished hypotheses by length-normalised score (HF's beam
    hypotheses); an empty slot scores -inf. ``seq`` is padded with -1."""

    score: torch.Tensor  # [Q, B]
    logprob: torch.Tensor  # [Q, B]
    node: torch.Tensor  # [Q, B]
    seq: torch.Tensor  # [Q, B, T]

    @classmethod
    def empty(cls, nq: int, width: int, dev) -> "_Finished":
        score = torch.full((nq, width), NEG_INF, device=dev)
        node = torch.full((nq, width), DEAD, dtype=torch.long, device=dev)
        return cls(score, score.clone(), node, torch.empty(nq, width, 0, dtype=torch.long, device=dev))

    def add(self, score: torch.Tensor, logprob: torch.Tensor, node: torch.Tensor, seq: torch.Tensor) -> None:
        """Merge candidates ``[Q, K]`` (score -inf: not finished) and keep the best ``width``."""
        old = torch.nn.functional.pad(self.seq, (0, seq.shape[2] - self.seq.shape[2]), value=-1)
        merged = torch.cat([self.score, score], 1)
        top = merged.topk(self.score.shape[1], dim=1).indices
        self.score = merged.gather(1, top)
        self.logprob = torch.cat([self.logprob, logprob], 1).gather(1, top)
        self.node = torch.cat([self.node, node], 1).gather(1, top)
        self.seq = torch.cat([old, seq], 1).gather(1, top[:, :, None].expand(-1, -1, seq.shape[2]))

    def worst(self) -> torch.Tensor:
        return self.score.min(dim=1).values

    def beams(self, tt: TrieTensors) -> Beams:
        tool_idx = tt.tool_index(self.node).tolist()
        score, logprob, seq = self.score.tolist(), self.logprob.tolist(), self.seq.tolist()
        out = Beams([], [], [], [])
        for q in range(len(score)):
            keep = [b for b, s in enumerate(score[q]) if s != NEG_INF]  # fewer than B hypotheses exist
            out.tools.append([tt.tools[tool_idx[q][b]] if tool_idx[q][b] >= 0 else None for b in keep])
            out.scores.append([score[q][b] for b in keep])
            out.logprobs.append([logprob[q][b] for b in keep])
            out.sequences.append([[t for t in seq[q][b] if t >= 0] for b in keep])
        return out


@dataclass
class _Running:
    """The ``width`` live beams of every query (flattened ``[Q * B]``) and where they came from."""

    score: torch.Tensor  # summed log-prob; -inf = no beam
    node: torch.Tensor
    seq: torch.Tensor  # [Q * B, t]
    parent: torch.Tensor  # [Q, B] the beam of the previous step (within its query) each extends


def _step(tt: TrieTensors, logp: torch.Tensor, run: _Running, fin: _Finished, open_: torch.Tensor, width: int,
          step: int, last: bool, length_penalty: float) -> _Running:
    """One step of HF's beam search: the best ``2 * width`` continuations of all live beams; those
    among the best ``width`` that end (EOS, or the step limit) join the finished hypotheses of
    the queries still ``open_``; the best ``width`` that do not end live on."""
    nq = open_.shape[0]
    nb, vocab = logp.shape[0] // nq, logp.shape[1]
    cand = (run.score[:, None] + logp).view(nq, nb * vocab)
    k = 2 * width
    vals, idx = cand.topk(min(k, nb * vocab), dim=1)
    if vals.shape[1] < k:  # a tiny vocabulary: pad with impossible continuations
        fill = k - vals.shape[1]
        vals = torch.cat([vals, vals.new_full((nq, fill), NEG_INF)], 1)
        idx = torch.cat([idx, idx[:, :1].expand(nq, fill)], 1)
    parent, tok = idx // vocab, idx % vocab
    src = (parent + torch.arange(nq, device=idx.device)[:, None] * nb).view(-1)
    node = tt.advance(run.node[src], tok.view(-1)).view(nq, k)
    seq = torch.cat([run.seq[src], tok.view(-1, 1)], 1).view(nq, k, -1)
    ended = (tok == tt.eos_id) | last
    new = ended & torch.isfinite(vals) & open_[:, None]
    new[:, width:] = False
    fin.add(torch.where(new, vals / _length_norm(step, length_penalty), NEG_INF), vals, node, seq)
    live, pick = vals.masked_fill(ended, NEG_INF).topk(width, dim=1)
    return _Running(live.view(-1), node.gather(1, pick).view(-1),
                    seq.gather(1, pick[:, :, None].expand(-1, -1, seq.shape[2])).view(nq * width, -1),
                    parent.gather(1, pick))


@torch.no_grad()
def beam_search(model, pre: Prefill, tt: TrieTensors, width: int, max_new_tokens: int, constrained: bool,
                length_penalty: float = 1.0, share_prompt: bool = True) -> Beams:
    """HF's beam search (``generate(num_beams=width, num_return_sequences=width,
    length_penalty=..., early_stopping=False)``) from ``pre``; its cache is left as it was.

    ``width`` beams stay live every step; a continuation ending in EOS (or at the step limit)
    becomes a finished hypothesis scored ``logprob / generated_length ** length_penalty``, and
    the best ``width`` of those are returned. A query stops collecting once its best live beam,
    normalised by the current length, cannot beat its worst kept hypothesis (HF's heuristic with
    ``early_stopping=False``; exact for ``length_penalty=0``). Tested equal to ``generate`` with
    ``prefix_allowed_tokens_fn`` on a clustered index. Left different: where fewer than ``width``
    hypotheses exist (a small trie), HF pads its list with placeholder beams scored -1e9 and we
    return a shorter list; exact score ties may break in another order.

    With ``share_prompt`` (default) every decode step appends the ``Q x B`` live tokens to the
    *shared* prompt cache as new positions, and a 4D mask lets each token see the prompt and its
    own ancestors only (:func:`_decode_tree`): the prompt's keys and values are never copied per
    beam. Without it, the cache is expanded to one row per beam and reordered every step (the
    textbook way; kept as the reference the tests compare against). Searches of more than
    ``TREE_MAX_STEPS`` steps take the textbook way too: every beam token attends to all
    ``steps x B`` beam positions of the tree, which outgrows the copies it saves."""
    share_prompt = share_prompt and max_new_tokens <= TREE_MAX_STEPS
    nq, dev = pre.logp.shape[0], pre.logp.device
    cache = None if share_prompt else copy.deepcopy(pre.cache)
    mask, logp = pre.attention_mask, pre.logp
    run = _Running(torch.zeros(nq, device=dev), torch.zeros(nq, dtype=torch.long, device=dev),
                   torch.empty(nq, 0, dtype=torch.long, device=dev), None)
    fin = _Finished.empty(nq, width, dev)
    open_ = torch.ones(nq, dtype=torch.bool, device=dev)
    see = None  # tree mode: [Q, B, calls*B] which earlier beam positions each beam sees
    calls = 0
    try:
        for step in range(max_new_tokens):
            if step > 0 and share_prompt:
                own = torch.eye(width, dtype=torch.bool, device=dev).expand(nq, width, width)
                see = own if see is None else torch.cat([see.gather(1, run.parent[:, :, None].expand(-1, -1, see.shape[2])), own], -1)
                logp = _decode_tree(model, run.seq[:, -1].view(nq, width), pre, see, calls).view(nq * width, -1)
                calls += 1
            elif step > 0:
                src = (run.parent + torch.arange(nq, device=dev)[:, None] * (mask.shape[0] // nq)).view(-1)
                cache.reorder_cache(src)
                mask = torch.cat([mask[src], mask.new_ones(len(src), 1)], 1)
                logp = _decode(model, run.seq[:, -1], cache, mask)
            if constrained:
                logp = logp.masked_fill(~tt.allowed_mask(run.node), NEG_INF)
            run = _step(tt, logp, run, fin, open_, width, step, step == max_new_tokens - 1, length_penalty)
            open_ &= run.score.view(nq, width)[:, 0] / _length_norm(step, length_penalty) > fin.worst()
            if not bool(open_.any()):
                break
    finally:
        if calls:
            pre.cache.crop(-calls * width)  # negative: drop the beams' positions (old and new transformers)
    return fin.beams(tt)


def _tree_inputs(model, tokens: torch.Tensor, pre: Prefill, see: torch.Tensor, call: int) -> dict:
    """The forward's arguments that append ``tokens`` [Q, k] to the prompt cache (which may already hold
    ``call`` earlier blocks of k beam positions). Token j of row q sees the prompt and the earlier-or-own
    beam positions where ``see[q, j]`` is true ([Q, k, (call + 1) * k]); all k tokens sit at the same
    position, ``call`` after the prompt."""
    q, k = tokens.shape
    plen = pre.attention_mask.shape[1]
    dtype = next(model.parameters()).dtype
    visible = torch.cat([pre.attention_mask[:, None, :].expand(q, k, plen).bool(), see], -1)
    mask = torch.zeros(q, 1, k, visible.shape[-1], dtype=dtype, device=tokens.device)
    mask.masked_fill_(~visible[:, None], torch.finfo(dtype).min)
    pos = pre.attention_mask.sum(-1, keepdim=True).expand(q, k) + call
    return {"input_ids": tokens, "attention_mask": mask, "position_ids": pos, "use_cache": True, _cache_kw(model): pre.cache}


@torch.no_grad()
def _decode_tree(model, tokens: torch.Tensor, pre: Prefill, see: torch.Tensor, call: int) -> torch.Tensor:
    """Log-probs [Q, k, V] after ``tokens`` [Q, k] in one forward of Q rows (:func:`_tree_inputs`).
    The caller crops the cache back to the prompt."""
    return _log_softmax(model(**_tree_inputs(model, tokens, pre, see, call)).logits)


LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "logits_scaling")
"""Config fields of models whose logits are not the LM head's output as is (Gemma 2's soft-capping,
Cohere's and Granite's scaling): :func:`_eos_after_siblings` reads them through the whole forward."""


def _plain_decoder(model):
    """The decoder under ``model``'s LM head where the logits are that head's output as is, else None."""
    cfg = getattr(model, "config", None)
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    if cfg is None or not hasattr(model, "get_decoder") or model.get_output_embeddings() is None:
        return None
    if any(getattr(cfg, f, None) not in (None, 1, 1.0) for f in LOGIT_TRANSFORMS):
        return None
    return model.get_decoder()


@torch.no_grad()
def _eos_after_siblings(model, tokens: torch.Tensor, pre: Prefill, eos_id: int) -> torch.Tensor:
    """log p(EOS) [Q, k] after each of ``tokens`` [Q, k] appended *alone* to its row's prompt (one
    forward, each token seeing the prompt and itself); the cache is cropped back after. The decoder's
    hidden states go through the LM head a slice of the vocabulary at a time (``head.token_logprob``),
    so the [Q, k, V] logits of the whole vocabulary are never held (4.5 GB at Q=128, k=50, V=175k); a
    model whose logits are not the head's output (:data:`LOGIT_TRANSFORMS`) takes the whole forward."""
    k = tokens.shape[1]
    own = torch.eye(k, dtype=torch.bool, device=tokens.device).expand(tokens.shape[0], k, k)
    decoder = _plain_decoder(model)
    try:
        if decoder is None:
            return _decode_tree(model, tokens, pre, own, 0)[..., eos_id]
        hidden = decoder(**_tree_inputs(decoder, tokens, pre, own, 0)).last_hidden_state
        return token_logprob(model, hidden, eos_id)
    finally:
        pre.cache.crop(-k)


@torch.no_grad()
def flat_constrained(model, pre: Prefill, tt: TrieTensors, width: int, length_penalty: float = 1.0) -> Beams:
    """Constrained top-``width`` for a flat index (every tool id is one token): rank tool
    tokens by their prefill log-prob, keep the best ``width``, and add the EOS term from one
    forward of those candidates side by side (:func:`_eos_after_siblings`). Equal to
    :func:`beam_search` with ``constrained=True``: every hypothesis has length 2, so the length
    normalisation divides all scores by the same ``2 ** length_penalty`` and keeps the ranking."""
    cand = tt.root_tokens()
    after = tt.advance(torch.zeros_like(cand), cand)
    term = tt.advance(after, torch.full_like(cand, tt.eos_id))
    if bool((term < 0).any()) or bool((tt.tool_index(term) < 0).any()):
        raise ValueError("flat_constrained needs a flat index: every tool id must be one token followed by EOS")
    k = min(width, len(cand))
    vals, pick = pre.logp[:, cand].topk(k, dim=1)
    tok = cand[pick]  # [Q, k]
    eos = _eos_after_siblings(model, tok, pre, tt.eos_id)
    total = vals + eos
    order = total.argsort(dim=1, descending=True, stable=True)
    total = total.gather(1, order)
    tok = tok.gather(1, order)
    nodes = tt.advance(tt.advance(torch.zeros_like(tok), tok), torch.full_like(tok, tt.eos_id))
    seqs = torch.stack([tok, torch.full_like(tok, tt.eos_id)], -1)
    return _Finished(total / _length_norm(1, length_penalty), total, nodes, seqs).beams(tt)
