"""An index's tokens in a model's vocabulary: adding them to a tokenizer and model (new
embedding rows initialised as the mean of the tool name's sub-tokens) and reading each tool's
id back as token ids. The constrained-decoding trie built from those ids is in ``trie.py``."""

from __future__ import annotations

import logging

import torch

from toolsense.index.tool_index import ToolIndex
from toolsense.utils.modeling import embeddings_tied

log = logging.getLogger(__name__)

PAD_TO_MULTIPLE_OF = 64
"""The embedding matrices are resized to a multiple of this many rows: tensor cores tile the LM
head's vocabulary dimension in multiples of 64, and 49,152 + 46,984 tool tokens = 96,136 rows is
not one. The rows past ``len(tokenizer)`` are zero and no token: the Retriever's LM head stops at
the tokenizer's length (``decoding.beam.fp32_head``), so no search can emit them."""


@torch.no_grad()
def add_index_tokens(index: ToolIndex, model, tokenizer) -> list[int]:
    """Add the index's new tokens to ``tokenizer``, resize ``model`` and initialise each new row
    as the mean of the sub-token embeddings of its init text (the tool's name), in the input
    embeddings and — when untied — the output embeddings. A tied model stays tied. The matrices
    grow to a multiple of :data:`PAD_TO_MULTIPLE_OF` rows (zero padding rows); every tensor is
    made on the model's device (the untrained baseline is on its GPU already).

    Returns the new token ids in :meth:`ToolIndex.tokens` order. Idempotent: tokens already in
    the tokenizer (e.g. a Stage-1 checkpoint) are left as they are.
    """
    from tokenizers import AddedToken

    tokens = index.tokens()
    vocab = tokenizer.get_vocab()
    new = [t for t in tokens if t not in vocab]
    if new:
        log.info("adding %d virtual tokens: tokenizing their names, resizing the embeddings", len(new))
        texts = [index.init_text[t] for t in new]
        # Sub-token ids under the tokenizer *before* the new tokens exist.
        sub = tokenizer(texts, add_special_tokens=False)["input_ids"]
        was_tied = embeddings_tied(model)
        n_old = len(tokenizer)
        tokenizer.add_tokens([AddedToken(t, normalized=False, special=False) for t in new])
        model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=PAD_TO_MULTIPLE_OF, mean_resizing=False)
        emb = model.get_input_embeddings().weight
        # Every index tensor on the weights' device: a model already on CUDA (the untrained
        # baseline is moved before its tokens are added) must not meet CPU indices.
        dev = emb.device
        lengths = torch.tensor([max(len(s), 1) for s in sub], device=dev)
        ids = [i for s in sub for i in (s or [tokenizer.eos_token_id])]
        # Only the sub-token rows in fp32 (not the whole matrix: 2 GB per rank at 8B): same means.
        used = sorted(set(ids))
        pos = {t: j for j, t in enumerate(used)}
        local = torch.tensor([pos[i] for i in ids], device=dev)
        used = torch.tensor(used, device=dev)
        offsets = torch.cat([torch.zeros(1, dtype=torch.long, device=dev), lengths.cumsum(0)[:-1]])
        new_ids = torch.arange(n_old, n_old + len(new), device=dev)
        emb[new_ids] = torch.nn.functional.embedding_bag(local, emb[used].float(), offsets, mode="mean").to(emb.dtype)
        emb[n_old + len(new):] = 0  # padding rows: no token; deterministic, and retrieval leaves them out
        out = model.get_output_embeddings()
        if out is not None and not embeddings_tied(model):
            if was_tied:
                raise RuntimeError("resizing untied a tied model")
            w = out.weight
            w[new_ids] = torch.nn.functional.embedding_bag(local, w[used].float(), offsets, mode="mean").to(w.dtype)
            w[n_old + len(new):] = 0
            if getattr(out, "bias", None) is not None:
                out.bias[n_old:] = 0
        log.info("added %d virtual tokens (vocab %d -> %d)", len(new), n_old, len(tokenizer))
    return tokenizer.convert_tokens_to_ids(tokens)


def tool_token_ids(index: ToolIndex, tokenizer) -> dict[str, list[int]]:
    """Each tool's id as token ids (the index tokens must already be in the tokenizer)."""
    vocab = tokenizer.get_vocab()
    missing = [t for t in index.tokens() if t not in vocab]
    if missing:
        raise ValueError(f"{len(missing)} index tokens are not in the tokenizer (e.g. {missing[0]!r}); call add_index_tokens first")
    return {name: [vocab[t] for t in path] for name, path in index.paths.items()}

