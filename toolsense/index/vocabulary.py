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
the tokenizer's length (``decoding.head.fp32_head``), so no search can emit them."""


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
        new_ids = range(n_old, n_old + len(new))
        _mean_rows(emb, new_ids, sub, tokenizer.eos_token_id)
        emb[n_old + len(new):] = 0  # padding rows: no token; deterministic, and retrieval leaves them out
        out = model.get_output_embeddings()
        if out is not None and not embeddings_tied(model):
            if was_tied:
                raise RuntimeError("resizing untied a tied model")
            _mean_rows(out.weight, new_ids, sub, tokenizer.eos_token_id)
            out.weight[n_old + len(new):] = 0
            if getattr(out, "bias", None) is not None:
                out.bias[n_old:] = 0
        log.info("added %d virtual tokens (vocab %d -> %d)", len(new), n_old, len(tokenizer))
    return tokenizer.convert_tokens_to_ids(tokens)


MEAN_CHUNK_ROWS = 16_384
"""Sub-token rows gathered (and upcast to fp32) at a time by the mean initialisation: 256 MB of fp32
at hidden 4096, whatever the vocabulary — never an fp32 copy of the whole matrix."""


@torch.no_grad()
def _mean_rows(weight: torch.Tensor, new_ids: range, sub: list[list[int]], fallback: int) -> None:
    """``weight[new_ids[i]] = mean(weight[sub[i]])``, averaged in fp32 and written in the weight's
    dtype, on the weight's device (a model already on its GPU must not meet CPU indices). Tools
    are taken in chunks of at most :data:`MEAN_CHUNK_ROWS` sub-token rows, and each chunk upcasts
    only the rows it uses; an empty sub-token list stands for ``fallback`` (EOS)."""
    dev, start = weight.device, 0
    while start < len(sub):
        stop, rows = start, 0
        while stop < len(sub) and (stop == start or rows + max(len(sub[stop]), 1) <= MEAN_CHUNK_ROWS):
            rows += max(len(sub[stop]), 1)
            stop += 1
        chunk = [s or [fallback] for s in sub[start:stop]]
        ids = [i for s in chunk for i in s]
        used = sorted(set(ids))
        pos = {t: j for j, t in enumerate(used)}
        local = torch.tensor([pos[i] for i in ids], device=dev)
        offsets = torch.tensor([0] + [len(s) for s in chunk[:-1]], device=dev).cumsum(0)
        means = torch.nn.functional.embedding_bag(local, weight[torch.tensor(used, device=dev)].float(), offsets, mode="mean")
        weight[new_ids[start]:new_ids[start] + len(chunk)] = means.to(weight.dtype)
        start = stop


def tool_token_ids(index: ToolIndex, tokenizer) -> dict[str, list[int]]:
    """Each tool's id as token ids (the index tokens must already be in the tokenizer)."""
    vocab = tokenizer.get_vocab()
    missing = [t for t in index.tokens() if t not in vocab]
    if missing:
        raise ValueError(f"{len(missing)} index tokens are not in the tokenizer (e.g. {missing[0]!r}); call add_index_tokens first")
    return {name: [vocab[t] for t in path] for name, path in index.paths.items()}

