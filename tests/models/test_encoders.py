"""The encoder service: length-sorted batches un-permuted exactly, the on-disk catalog cache
(second run encodes nothing, torn or foreign entries are never trusted, interrupted encodings
resume), and the int8 / onnx backends."""

import json

import numpy as np
import pytest

from toolsense.catalog import load_demo_catalog
from toolsense.models.encoders import (
    SentenceEncoder,
    cache_root,
    catalog_embeddings,
    encoder_embeddings,
    length_sorted_batches,
    load_encoder,
)


class Spy:
    """Wraps an embedder, counting the texts it is asked to encode."""

    def __init__(self, inner, fail_after_batches=None):
        self.inner, self.identity, self.calls, self.texts = inner, inner.identity, 0, 0
        self.fail_after = fail_after_batches

    def encode(self, texts, progress=False, chunk_done=None, skip=None):
        self.calls += 1
        batches = 0

        def done(i, rows):
            nonlocal batches
            chunk_done(i, rows)
            batches += 1
            if self.fail_after is not None and batches == self.fail_after:
                raise KeyboardInterrupt("killed mid-encoding")

        def counting_skip(i):
            rows = skip(i) if skip else None
            if rows is None:
                self.texts += len(next(b for j, b in enumerate(length_sorted_batches([len(t) for t in texts], self.inner.batch_size))
                                       if j == i))
            return rows

        return self.inner.encode(texts, progress, done if chunk_done else None, counting_skip)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path))
    return tmp_path / "embeddings"


@pytest.fixture(scope="module")
def catalog():
    return load_demo_catalog()


@pytest.fixture(scope="module")
def small(catalog):
    """24 demo tools for the cache's rules, which hold at any size (encoding all 126 took ~10 s a time, loaded)."""
    return catalog.subset(catalog.names[:24])


def test_length_sorted_batches_are_a_permutation_longest_first():
    batches = list(length_sorted_batches([3, 10, 1, 7, 7, 2], 4))
    assert [b.tolist() for b in batches] == [[1, 3, 4, 0], [5, 2]]


def test_sorted_batches_give_the_unsorted_embeddings_in_input_order():
    texts = ["a", "a much longer sentence about the weather in Paris and Berlin tomorrow", "currency", "x " * 40, "translate to French"]
    enc = SentenceEncoder(batch_size=2)
    got = enc.encode(texts)
    one_by_one = np.stack([load_encoder(None).encode([t], batch_size=1) for t in texts])[:, 0]
    assert got.dtype == np.float32 and got.shape == (5, 384)
    assert np.abs(got - one_by_one).max() < 1e-5


def test_second_run_encodes_nothing_and_loads_memory_mapped(cache, catalog):
    spy = Spy(SentenceEncoder(batch_size=64))
    first = np.array(catalog_embeddings(catalog, spy, progress=False))
    assert (spy.calls, spy.texts) == (1, len(catalog))
    again = catalog_embeddings(catalog, spy, progress=False)
    assert spy.calls == 1  # the encoder was not called
    assert isinstance(again, np.memmap) and np.array_equal(first, np.asarray(again))
    assert np.allclose(np.linalg.norm(first, axis=1), 1, atol=1e-5)
    [side] = cache.glob("*.json")
    meta = json.loads(side.read_text())
    assert meta["names"] == catalog.names and meta["shape"] == [len(catalog), 384]
    assert meta["key"]["catalog"] == catalog.content_hash() and meta["key"]["template"] == "tool_text"
    assert meta["encoder"].startswith("embedded:all-MiniLM-L6-v2@") and meta["encoder"].endswith("|torch")
    assert not list(cache.glob("*.parts")) and not list(cache.glob(".*tmp"))


def test_key_separates_template_normalisation_and_catalog(cache, small):
    spy = Spy(SentenceEncoder(batch_size=64))
    unit = catalog_embeddings(small, spy, progress=False)
    raw = catalog_embeddings(small, spy, normalize=False, progress=False)
    api = catalog_embeddings(small, spy, template="api_text", progress=False)
    sub = catalog_embeddings(small.subset(small.names[:10]), spy, progress=False)
    assert spy.calls == 4 and len(list(cache.glob("*.npy"))) == 4
    assert np.allclose(unit, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)
    assert not np.allclose(unit, api)
    assert np.allclose(sub, unit[:10], atol=1e-5)


def test_torn_or_foreign_entries_are_not_trusted(cache, small):
    spy = Spy(SentenceEncoder(batch_size=64))
    good = np.array(catalog_embeddings(small, spy, progress=False))
    [npy] = cache.glob("*.npy")
    npy.write_bytes(npy.read_bytes()[:1000])  # a file cut short (not possible through the rename; a disk error)
    assert np.array_equal(np.asarray(catalog_embeddings(small, spy, progress=False)), good) and spy.calls == 2
    side = npy.with_suffix(".json")
    meta = json.loads(side.read_text())
    side.write_text(json.dumps({**meta, "names": list(reversed(meta["names"]))}))
    catalog_embeddings(small, spy, progress=False)
    assert spy.calls == 3
    side.unlink()  # killed between the two renames: the matrix alone is never used
    catalog_embeddings(small, spy, progress=False)
    assert spy.calls == 4


def test_interrupted_encoding_resumes_from_its_batches(cache, small):
    killed = Spy(SentenceEncoder(batch_size=8), fail_after_batches=2)
    with pytest.raises(KeyboardInterrupt):
        catalog_embeddings(small, killed, progress=False)
    assert not list(cache.glob("*.npy")) and len(list(next(cache.glob("*.parts")).iterdir())) == 2
    resumed = Spy(SentenceEncoder(batch_size=8))
    emb = catalog_embeddings(small, resumed, progress=False)
    assert resumed.texts == len(small) - 16  # the two finished batches were read back, not encoded
    fresh = SentenceEncoder(batch_size=8).encode([t.text() for t in small])
    assert np.abs(np.asarray(emb) - fresh / np.linalg.norm(fresh, axis=1, keepdims=True)).max() < 1e-5


def test_int8_backend_is_close_but_not_exact_and_keyed_apart(cache, catalog):
    exact = encoder_embeddings(catalog)
    fast = encoder_embeddings(catalog, backend="int8")
    assert len(list(cache.glob("*.npy"))) == 2
    cos = np.sum(np.asarray(exact) * np.asarray(fast), axis=1)
    assert cos.min() > 0.95 and cos.mean() > 0.975 and not np.array_equal(exact, fast)
    # most nearest neighbours survive quantisation (demo tools come in tight look-alike groups)
    def nn(e):
        return np.argsort(-(np.asarray(e) @ np.asarray(e).T), axis=1)[:, 1]

    assert np.mean(nn(exact) == nn(fast)) > 0.7


def test_onnx_backend_without_optimum_is_a_clear_error():
    pytest.importorskip("sentence_transformers")
    try:
        import optimum  # noqa: F401
        pytest.skip("optimum is installed")
    except ImportError:
        pass
    with pytest.raises(RuntimeError, match=r"backend 'onnx' needs optimum\[onnxruntime\]"):
        load_encoder(None, None, "onnx")


def test_unknown_backend_and_missing_model_are_errors(tmp_path):
    with pytest.raises(ValueError, match="encoder backend must be one of"):
        load_encoder(None, None, "fp16")
    with pytest.raises(FileNotFoundError, match="no such local folder"):
        SentenceEncoder(str(tmp_path / "nope"))


def test_cache_root_follows_toolsense_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path))
    assert cache_root() == tmp_path / "embeddings"
