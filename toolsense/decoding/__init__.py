"""Decoding tool ids with a model: its settings (``config.py``: ``DecodingConfig``,
``QueryLengthConfig``), the trie's tensor form (``trie_tensors.py``), batched constrained /
free-form beam search (``beam.py``) and parametric retrieval of a batch of queries
(``retrieval.py``, the ``Retriever``). Import from those modules; this package imports none of
them, so reading the settings loads no torch.

The trie itself (token ids of every tool id + EOS, CSR arrays) belongs to the index:
``toolsense/index/trie.py``. This package turns it into tensors and searches with it. It stands
on ``index`` and ``data`` (the training prompt) and never imports ``evaluation``, which scores
what it returns.
"""
