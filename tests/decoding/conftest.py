"""Fixtures of the decoding tests: a bigram "language model" whose beam-search answers are
known by hand."""

from __future__ import annotations

import pytest
import torch


class _NoCache:
    def reorder_cache(self, idx):
        pass

    def crop(self, length):
        pass


class _Out:
    def __init__(self, logits):
        self.logits = logits
        self.cache = _NoCache()


class BigramLM(torch.nn.Module):
    """next-token logits = ``table[last input token]``: beam search over it is checkable by hand."""

    NoCache = _NoCache

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.table = torch.nn.Parameter(table, requires_grad=False)

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None, use_cache=None, logits_to_keep=0):
        return _Out(self.table[input_ids])


@pytest.fixture
def bigram():
    return BigramLM
