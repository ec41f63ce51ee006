"""Embedding baselines encode the catalog once: a rerun of dense sends nothing for the tools (only the
queries), a rerun of openai sends nothing at all (its query batches are cached too), both rank identically,
and te3l is the OpenAI default."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from toolsense.baselines import rankers as baselines
from toolsense.baselines.config import BaselineConfig
from toolsense.baselines.rankers import build_baseline
from toolsense.catalog import load_catalog, load_query_jsonl
from toolsense.models.encoders import SentenceEncoder

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "evaluation"
CONF = Path(__file__).resolve().parents[2] / "toolsense" / "conf" / "baseline"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path))
    return tmp_path / "embeddings"


def _rank(ranker, queries):
    return [[x["tool"] for x in r.constrained] for r in ranker.run(queries)]


def test_dense_rerun_encodes_no_tool_text(cache, monkeypatch):
    cat, queries = load_catalog(ASSETS / "tools.jsonl"), load_query_jsonl(ASSETS / "queries.jsonl")
    seen: list[int] = []
    real = SentenceEncoder.encode
    monkeypatch.setattr(SentenceEncoder, "encode", lambda self, texts, *a, **k: seen.append(len(texts)) or real(self, texts, *a, **k))
    first = _rank(build_baseline(cat, BaselineConfig(kind="dense", batch_size=4), 5), queries)
    assert seen[0] == len(cat) and sum(seen[1:]) == len(queries)
    seen.clear()
    second = _rank(build_baseline(cat, BaselineConfig(kind="dense", batch_size=4), 5), queries)
    assert sum(seen) == len(queries)  # queries only: the catalog came from the cache
    assert first == second
    assert first[5][0] == "Translate It&&Translate"


class FakeOpenAI:
    """Stands in for ``openai.OpenAI``: embeds a text as its letter counts; records every call."""

    calls: list[tuple[str, int]] = []

    def __init__(self, **client_kw):
        self.base_url = "https://api.openai.com/v1/"
        self.embeddings = SimpleNamespace(create=self._create)

    def _create(self, model, input, encoding_format):
        FakeOpenAI.calls.append((model, len(input)))
        vecs = [[t.lower().count(c) + 0.01 for c in "abcdefghijklmnopqrstuvwxyz"] for t in input]
        return SimpleNamespace(data=[SimpleNamespace(embedding=v) for v in vecs])


def test_openai_defaults_to_te3l_and_rerun_sends_no_request(cache, monkeypatch):
    import openai

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-from-env")
    monkeypatch.setattr(openai, "OpenAI", FakeOpenAI)
    FakeOpenAI.calls = []
    cat, queries = load_catalog(ASSETS / "tools.jsonl"), load_query_jsonl(ASSETS / "queries.jsonl")
    cfg = BaselineConfig(kind="openai", batch_size=100, encode_batch_size=5)
    first = build_baseline(cat, cfg, 5)
    assert FakeOpenAI.calls == [("text-embedding-3-large", 5), ("text-embedding-3-large", 5), ("text-embedding-3-large", 2)]
    ranked = _rank(first, queries)
    FakeOpenAI.calls = []
    second = build_baseline(cat, cfg, 5)
    assert FakeOpenAI.calls == []  # zero embedding calls for the catalog
    assert _rank(second, queries) == ranked
    assert FakeOpenAI.calls == []  # nor for the queries: each batch is cached
    small = build_baseline(cat, BaselineConfig(kind="openai", encoder="text-embedding-3-small", encode_batch_size=50), 5)
    assert small is not None and FakeOpenAI.calls[-1] == ("text-embedding-3-small", len(cat))  # keyed by model
    assert "sk-test" not in "".join(p.read_text() for p in cache.glob("*.json"))


def test_openai_cache_key_names_a_foreign_server_but_never_the_key():
    from toolsense.models.encoders import OpenAIEmbedder

    own = OpenAIEmbedder(SimpleNamespace(url="https://api.openai.com/v1/", api_key="sk-secret"), "text-embedding-3-large")
    local = OpenAIEmbedder(SimpleNamespace(url="http://127.0.0.1:8000/v1", api_key="sk-secret"), "text-embedding-3-large")
    assert own.identity == "openai:text-embedding-3-large"
    assert local.identity == "openai:text-embedding-3-large@http://127.0.0.1:8000/v1"


def test_openai_yaml_and_dataclass_default_to_te3l():
    assert OmegaConf.load(CONF / "openai.yaml").encoder == "text-embedding-3-large"
    assert baselines.OPENAI_DEFAULT_MODEL == "text-embedding-3-large"
    dense = BaselineConfig(**OmegaConf.to_container(OmegaConf.load(CONF / "dense.yaml")))
    assert dense.backend == "torch"


def test_backend_is_for_dense_only():
    with pytest.raises(ValueError, match="baseline.backend=int8 applies to kind=dense only"):
        BaselineConfig(kind="bm25", backend="int8")
    with pytest.raises(ValueError, match="baseline.backend must be torch, int8 or onnx"):
        BaselineConfig(kind="dense", backend="fp16")


def test_dense_document_is_part_of_the_cache_key(cache, monkeypatch):
    """baseline.document=toolgen encodes ToolGen's documents into their own entry; the default's stays valid."""
    from toolsense.models.encoders import TEXT_TEMPLATES

    cat = load_catalog(ASSETS / "tools.jsonl")
    seen: list[list[str]] = []
    real = SentenceEncoder.encode
    monkeypatch.setattr(SentenceEncoder, "encode", lambda self, texts, *a, **k: seen.append(list(texts)) or real(self, texts, *a, **k))
    build_baseline(cat, BaselineConfig(kind="dense"), 5)
    build_baseline(cat, BaselineConfig(kind="dense", document="toolgen"), 5)
    assert sorted(seen[1]) == sorted(TEXT_TEMPLATES.get("toolgen")(t) for t in cat)  # the documents encoded are ToolGen's
    assert len(list(cache.glob("*.npy"))) == 2
    seen.clear()
    build_baseline(cat, BaselineConfig(kind="dense"), 5)
    build_baseline(cat, BaselineConfig(kind="dense", document="toolgen"), 5)
    assert seen == []  # both from the cache
