"""Non-parametric baselines over the tools' text (a registry): BM25 (bm25s or Okapi), dense retrieval
with sentence-transformers (default: the embedded MiniLM; any local model path), and OpenAI
embeddings (key from ``OPENAI_API_KEY`` only); the catalog side of the embedding baselines is
encoded once and cached on disk by ``toolsense.models.encoders``. Each ranks the whole catalog for a query and
yields the same :class:`Retrieved` records as parametric retrieval, so outputs line up.

What a baseline indexes is its config: ``baseline.document`` (a text template,
``toolsense/models/encoders/documents.py``), and for BM25 ``baseline.tokenizer`` and
``baseline.scorer`` (the registries below); ``conf/baseline/bm25_toolgen.yaml`` rebuilds ToolGen's."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import numpy as np

from toolsense.catalog import Catalog, Query
from toolsense.decoding.retrieval import Retrieved
from toolsense.utils.registry import Registry

if TYPE_CHECKING:  # config.py checks baseline.tokenizer / scorer against the registries below
    from toolsense.baselines.config import BaselineConfig

ScoreFn = Callable[[Sequence[str]], np.ndarray]


class Ranker:
    """Ranks the catalog's tools for each query by ``score_fn(texts) -> [n_queries, n_tools]``."""

    def __init__(self, catalog: Catalog, top: int, batch_size: int, score_fn: ScoreFn):
        self.names = catalog.names
        self.top = min(top, len(self.names))
        self.batch_size = batch_size
        self.score_fn = score_fn

    def run(self, queries: Sequence[Query]) -> Iterator[Retrieved]:
        for start in range(0, len(queries), self.batch_size):
            chunk = queries[start : start + self.batch_size]
            s = np.asarray(self.score_fn([q.text for q in chunk]), dtype=np.float64)
            order = np.argsort(-s, axis=1, kind="stable")[:, : self.top]
            for q, row, srow in zip(chunk, order, s):
                yield Retrieved(q, None, [{"tool": self.names[i], "score": round(float(srow[i]), 5)} for i in row], None)


BASELINES: Registry[Callable[[Catalog, BaselineConfig, int], Ranker]] = Registry("baseline")


OPENAI_DEFAULT_MODEL = "text-embedding-3-large"
"""The paper's te3l."""


def _unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)


def embedding_ranker(catalog: Catalog, top: int, batch_size: int, embedder, document: str = "tool_text") -> Ranker:
    """Cosine similarity between query embeddings (encoded per batch, not cached) and the
    catalog's ``document`` embeddings (from the encoder service's disk cache, keyed by the
    template too: encoded once per document format)."""
    from toolsense.models.encoders import catalog_embeddings

    tool_emb = catalog_embeddings(catalog, embedder, document)
    return Ranker(catalog, top, batch_size, lambda texts: _unit(embedder.encode(list(texts))) @ tool_emb.T)


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


@BASELINES.register("bm25")
def bm25(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    """BM25 over each tool's ``cfg.document`` text, split by ``cfg.tokenizer``, scored by
    ``cfg.scorer`` (defaults: ``tool_text``, bm25s' English tokenizer, bm25s' Lucene BM25)."""
    from toolsense.models.encoders import TEXT_TEMPLATES

    template = TEXT_TEMPLATES.get(cfg.document)
    tokenize = BM25_TOKENIZERS.get(cfg.tokenizer)
    score = BM25_SCORERS.get(cfg.scorer)(tokenize([template(t) for t in catalog]))
    return Ranker(catalog, top, cfg.batch_size, lambda texts: score(tokenize(texts)))


@BASELINES.register("dense")
def dense(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    """A local sentence encoder (default the embedded MiniLM) on ``cfg.backend``."""
    from toolsense.models.encoders import SentenceEncoder

    return embedding_ranker(catalog, top, cfg.batch_size, SentenceEncoder(cfg.encoder, cfg.backend, cfg.encode_batch_size),
                            cfg.document)


def openai_client():
    """An ``openai.OpenAI`` client; the key comes from OPENAI_API_KEY (and OPENAI_BASE_URL if set) only."""
    if not os.environ.get("OPENAI_API_KEY"):
        raise RuntimeError("baseline kind=openai needs OPENAI_API_KEY in the environment")
    from openai import OpenAI

    return OpenAI()


@BASELINES.register("openai")
def openai_embeddings(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    """OpenAI embeddings (default text-embedding-3-large); the catalog's are cached on disk
    keyed by (catalog, model), so a rerun sends requests for the queries only."""
    from toolsense.models.encoders import OpenAIEmbedder

    embedder = OpenAIEmbedder(openai_client(), cfg.encoder or OPENAI_DEFAULT_MODEL, cfg.encode_batch_size)
    return embedding_ranker(catalog, top, cfg.batch_size, embedder, cfg.document)


def build_baseline(catalog: Catalog, cfg: BaselineConfig, top: int) -> Ranker:
    return BASELINES.get(cfg.kind)(catalog, cfg, top)
