"""Decoding tool ids with a model: the trie's tensor form (``trie_tensors.py``), batched
constrained / free-form beam search (``beam.py``) and parametric retrieval of a batch of queries
(``retrieval.py``, the :class:`Retriever`).

The trie itself (token ids of every tool id + EOS, CSR arrays) belongs to the index:
``toolsense/index/trie.py``. This package turns it into tensors and searches with it. It stands
on ``index`` and ``data`` (the training prompt) and never imports ``evaluation``, which scores
what it returns.
"""

from toolsense.decoding.beam import Beams, beam_search, flat_constrained
from toolsense.decoding.retrieval import Retrieved, Retriever
from toolsense.decoding.trie_tensors import TrieTensors

__all__ = ["Beams", "Retrieved", "Retriever", "TrieTensors", "beam_search", "flat_constrained"]
