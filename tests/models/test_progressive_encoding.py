"""Encoding a catalog gold-first then in a seeded random order, chunk by chunk: what is encoded
after any chunk is the gold tools plus a uniform sample, a killed run resumes at its next chunk,
and the finished matrix is the ordinary cache entry (real MiniLM on the demo catalog)."""

import numpy as np
import pytest

from toolsense.catalog import load_demo_catalog
from toolsense.models.encoders import SentenceEncoder, catalog_embeddings
from toolsense.models.encoders.progressive import encode_progressively, encoded_so_far, encoding_order


class Counting:
    """An embedder that counts its texts and is 'killed' after ``fail_after`` calls."""

    def __init__(self, fail_after=None):
        self.inner = SentenceEncoder(batch_size=16)
        self.identity, self.calls, self.texts, self.fail_after = self.inner.identity, 0, 0, fail_after

    def encode(self, texts, progress=False, chunk_done=None, skip=None):
        if self.fail_after is not None and self.calls == self.fail_after:
            raise KeyboardInterrupt("killed")
        self.calls += 1
        self.texts += len(texts)
        return self.inner.encode(texts)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path))
    return tmp_path / "embeddings"


def test_order_is_gold_sorted_then_a_seeded_permutation_of_the_rest():
    cat = load_demo_catalog()
    gold = [cat.names[7], cat.names[2], "not-in-the-catalog"]
    order = encoding_order(cat, gold, seed=0)
    assert order[:2] == sorted(gold[:2]) and sorted(order) == sorted(cat.names)
    assert order == encoding_order(cat, gold, seed=0) and order[2:] != encoding_order(cat, gold, seed=1)[2:]
    assert order[2:] != [n for n in cat.names if n not in gold]  # shuffled, not catalog order


def test_killed_encoding_leaves_gold_plus_a_sample_and_resumes_to_the_cache_entry(cache):
    cat = load_demo_catalog()
    cat = cat.subset(cat.names[:40])
    gold = cat.names[30:35]
    killed = Counting(fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        encode_progressively(cat, killed, "tool_text", gold, chunk=8)
    names, emb = encoded_so_far(cat, killed, "tool_text")
    assert names == encoding_order(cat, gold)[:16] and set(gold) <= set(names)
    assert emb.shape == (16, 384) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    assert not list(cache.glob("*.npy"))  # no cache entry before the last chunk

    resumed = Counting()
    full = encode_progressively(cat, resumed, "tool_text", gold, chunk=8)
    assert resumed.texts == 40 - 16  # the two saved chunks were read back, not encoded
    reader = Counting()
    cached = catalog_embeddings(cat, reader, "tool_text", progress=False)
    assert reader.calls == 0 and np.array_equal(np.asarray(full), np.asarray(cached))
    fresh = SentenceEncoder(batch_size=16).encode([t.text() for t in cat])
    assert np.abs(np.asarray(cached) - fresh / np.linalg.norm(fresh, axis=1, keepdims=True)).max() < 1e-5


def test_a_changed_order_is_refused_with_the_folder_to_delete(cache):
    cat = load_demo_catalog().subset(load_demo_catalog().names[:12])
    enc = Counting()
    encode_progressively(cat, enc, "api_text", cat.names[:2], chunk=6)
    with pytest.raises(ValueError, match="another order, chunk size or seed.*delete"):
        encode_progressively(cat, enc, "api_text", cat.names[:2], chunk=4)
