"""BM25's two choices (registries): how documents and queries split into terms
(``BM25_TOKENIZERS``, ``baseline.tokenizer``) and which BM25 variant scores them (``BM25_SCORERS``,
``baseline.scorer``). Apart from the rankers (``rankers.py``) so that ``BaselineConfig`` checks
both names without importing the rankers (and the search, torch with it, through ``Retrieved``): numpy
here, bm25s and scipy inside the functions."""

from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

from toolsense.utils.registry import Registry

Tokenizer = Callable[[Sequence[str]], list[list[str]]]
BM25_TOKENIZERS: Registry[Tokenizer] = Registry("bm25 tokenizer")
"""``baseline.tokenizer``: how BM25 splits documents and queries into terms."""


@BM25_TOKENIZERS.register("bm25s_en")
def bm25s_en_tokens(texts: Sequence[str]) -> list[list[str]]:
    """bm25s' tokenizer: lower-cased words of 2+ word characters, English stopwords removed."""
    import bm25s

    return [list(t) for t in bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)]


_WORDS = re.compile(r"\w+|[^\w\s]", re.UNICODE)


@BM25_TOKENIZERS.register("words")
def word_tokens(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased words and single punctuation marks, nothing dropped: close to ToolGen's
    ``nltk.word_tokenize(text.lower())`` (Treebank also splits clitics such as ``n't``, which
    this does not), without NLTK and its punkt data."""
    return [_WORDS.findall(t.lower()) for t in texts]


TermScorer = Callable[[list[list[str]]], Callable[[list[list[str]]], np.ndarray]]
BM25_SCORERS: Registry[TermScorer] = Registry("bm25 scorer")
"""``baseline.scorer``: the BM25 variant. Each takes the tokenised documents and returns
``score(tokenised queries) -> [n_queries, n_docs]``."""


@BM25_SCORERS.register("bm25s")
def bm25s_scorer(docs: list[list[str]]) -> Callable[[list[list[str]]], np.ndarray]:
    """bm25s' defaults: Lucene's BM25 (idf = ln(1 + (N - n + 0.5) / (n + 0.5)), k1 1.5, b 0.75)."""
    import bm25s

    model = bm25s.BM25()
    model.index(docs, show_progress=False)
    vocab, n_docs = set(model.vocab_dict), len(docs)

    def score(queries: list[list[str]]) -> np.ndarray:
        known = [[w for w in q if w in vocab] for q in queries]  # bm25s fails on a query with no known term
        return np.stack([model.get_scores(q) if q else np.zeros(n_docs) for q in known])

    return score


OKAPI_K1, OKAPI_B, OKAPI_EPSILON = 1.5, 0.75, 0.25
"""rank_bm25's ``BM25Okapi`` defaults, which ToolGen's ``BM25Indexer`` uses unchanged."""


@BM25_SCORERS.register("okapi")
def okapi_scorer(docs: list[list[str]]) -> Callable[[list[list[str]]], np.ndarray]:
    """Okapi BM25 as rank_bm25's ``BM25Okapi`` defines it (ToolGen's BM25): idf = ln((N - n +
    0.5) / (n + 0.5)); a term in more than half the documents (negative idf) gets epsilon times
    the mean idf of all terms instead; each occurrence of a term in the query adds its weight
    again. Computed on a sparse term matrix (the same scores, not rank_bm25's per-term loop)."""
    from scipy import sparse

    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, d in enumerate(docs):
        for w in d:
            rows.append(i)
            cols.append(vocab.setdefault(w, len(vocab)))
    n_docs = len(docs)
    tf = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_docs, len(vocab)))
    tf.sum_duplicates()
    df = np.bincount(tf.indices, minlength=len(vocab))
    idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    idf[idf < 0] = OKAPI_EPSILON * idf.mean()
    dl = np.asarray(tf.sum(axis=1)).ravel()
    norm = OKAPI_K1 * (1 - OKAPI_B + OKAPI_B * dl / max(dl.mean(), 1e-12))
    w = tf.tocoo()
    weights = sparse.csr_matrix((w.data * (OKAPI_K1 + 1) / (w.data + norm[w.row]), (w.row, w.col)), shape=tf.shape)
    weights_t = weights.T.tocsr()

    def score(queries: list[list[str]]) -> np.ndarray:
        q_rows, q_cols = [], []
        for i, q in enumerate(queries):
            for t in q:
                if t in vocab:
                    q_rows.append(i)
                    q_cols.append(vocab[t])
        qm = sparse.csr_matrix((idf[q_cols], (q_rows, q_cols)), shape=(len(queries), len(vocab)))
        return np.asarray((qm @ weights_t).todense())

    return score
