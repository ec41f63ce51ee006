"""The virtual tokens' mean initialisation never makes an fp32 copy of the whole embedding: it
upcasts the sub-token rows a chunk of tools uses (``MEAN_CHUNK_ROWS`` at a time), on the
weights' device, and gives the same rows as one pass over every tool."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

import toolsense.index.vocabulary as vocabulary
from toolsense.index import add_index_tokens, build_index


class Fp32Sizes(TorchDispatchMode):
    """Records the element count of every float32 tensor an op produces."""

    def __init__(self):
        super().__init__()
        self.sizes: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.sizes += [t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.dtype == torch.float32]
        return out


def _bf16():
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    return load_model_and_tokenizer(ModelConfig("tiny_random", dtype="bfloat16"))


def _reference_means(weight: torch.Tensor, subs: list[list[int]]) -> torch.Tensor:
    return torch.stack([weight[s].float().mean(0) for s in subs]).to(weight.dtype)


@pytest.mark.parametrize("chunk", [1, 7, 16_384])
def test_chunked_means_equal_the_per_tool_means(demo_catalog, monkeypatch, chunk):
    model, tok = _bf16()
    base = model.get_input_embeddings().weight.detach().clone()
    idx = build_index(demo_catalog, "flat")
    subs = [tok(idx.init_text[t], add_special_tokens=False)["input_ids"] for t in idx.tokens()]
    monkeypatch.setattr(vocabulary, "MEAN_CHUNK_ROWS", chunk)
    ids = add_index_tokens(idx, model, tok)
    emb = model.get_input_embeddings().weight
    assert emb.dtype == torch.bfloat16 and ids == list(range(base.shape[0], base.shape[0] + len(subs)))
    assert torch.equal(emb[: base.shape[0]], base) and not emb[len(tok):].any()
    # bf16 rows of fp32 means: equal up to one rounding of the order the sums ran in
    assert torch.allclose(emb[ids].float(), _reference_means(base, subs).float(), rtol=1e-2, atol=1e-3)


def test_chunk_size_does_not_change_the_rows(demo_catalog, monkeypatch):
    rows = {}
    for chunk in (3, 16_384):
        model, tok = _bf16()
        monkeypatch.setattr(vocabulary, "MEAN_CHUNK_ROWS", chunk)
        add_index_tokens(build_index(demo_catalog, "flat"), model, tok)
        rows[chunk] = model.get_input_embeddings().weight.detach().clone()
    assert torch.allclose(rows[3].float(), rows[16_384].float(), rtol=0, atol=1e-2)
    assert (rows[3] == rows[16_384]).float().mean() > 0.99  # fp32 sums in another grouping round alike but for a few


def test_no_fp32_copy_of_the_whole_embedding(demo_catalog, monkeypatch):
    """On a bf16 model every fp32 tensor ``add_index_tokens`` makes is at most one chunk of
    sub-token rows (64 here) plus the chunk's means: upcasting the whole matrix (the old
    ``emb.float()``; 2 GB per rank at 8B) or every used row at once would show as a larger one."""
    model, tok = _bf16()
    hidden = model.config.hidden_size
    idx = build_index(demo_catalog, "flat")
    monkeypatch.setattr(vocabulary, "MEAN_CHUNK_ROWS", 64)
    with Fp32Sizes() as seen:
        add_index_tokens(idx, model, tok)
    rows = model.get_input_embeddings().weight.shape[0]
    assert seen.sizes, "the mean initialisation computes in fp32"
    assert max(seen.sizes) <= 64 * hidden < rows * hidden // 10
    subs = [tok(idx.init_text[t], add_special_tokens=False)["input_ids"] for t in idx.tokens()]
    assert len({i for s in subs for i in s}) > 64  # the bound bites: all used rows at once would exceed it
