"""On a CUDA device (``pytest -m gpu``; skipped with the reason elsewhere): the untrained
baseline (model moved to the GPU before its index tokens are added) and the beam search under
sdpa and, where flash-attn is installed, flash_attention_2 — the Retriever switches the latter
to sdpa, so both give the same ranking."""

from __future__ import annotations

import importlib.util

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

QUERIES = ["check whether a link is safe", "convert euros to dollars", "what is the weather in Paris"]


def _dec():
    from toolsense.evaluation.config import DecodingConfig

    return DecodingConfig(beam_width=10, batch_size=8)


def _retrieve(ev, queries):
    from toolsense.decoding.retrieval import Retriever

    r = Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts, _dec())
    return r, list(r.run(queries))


def _untrained(attn: str | None = None):
    from toolsense.catalog.config import CatalogConfig
    from toolsense.evaluation.context import load_untrained
    from toolsense.index.config import IndexConfig
    from toolsense.models import ModelConfig

    return load_untrained(ModelConfig("tiny_random", dtype="bfloat16", attn_implementation=attn), CatalogConfig(), IndexConfig())


def test_untrained_baseline_on_the_gpu():
    from toolsense.catalog import Query

    ev = _untrained()
    assert ev.device.type == "cuda" and ev.model.get_input_embeddings().weight.shape[0] % 64 == 0
    _, out = _retrieve(ev, [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES)])
    assert len(out) == len(QUERIES) and all(len(r.constrained) == 10 for r in out)
    assert all(x["tool"] in ev.index.paths for r in out for x in r.constrained)
    assert all(r.constrained[i]["score"] >= r.constrained[i + 1]["score"] for r in out for i in range(9))


@pytest.mark.parametrize("attn", ["sdpa", "flash_attention_2"])
def test_beam_search_under_each_attention_implementation(attn):
    from toolsense.catalog import Query

    if attn == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
        pytest.skip("flash-attn is not installed")
    queries = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES)]
    ref_retriever, ref = _retrieve(_untrained("sdpa"), queries)
    r, out = _retrieve(_untrained(attn), queries)
    assert r.attn_implementation == "sdpa"  # FA2 cannot read the 4D masks: switched, with a warning
    assert [[x["tool"] for x in a.constrained] for a in out] == [[x["tool"] for x in a.constrained] for a in ref]


def test_auto_batch_size_on_the_gpu_ranks_as_batch_8():
    """decoding.batch_size=auto on a GPU sizes above the CPU's 8 (tiny_random leaves almost all the
    memory free: the ceiling) and ranks exactly as batches of 8."""
    from toolsense.catalog import Query
    from toolsense.decoding import batching
    from toolsense.decoding.retrieval import Retriever
    from toolsense.evaluation.config import DecodingConfig

    ev = _untrained()
    queries = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES * 6)]
    runs = {}
    for b in ("auto", 8):
        r = Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts, DecodingConfig(beam_width=10, ks=[1, 10], batch_size=b))
        runs[b] = [[x["tool"] for x in a.constrained] for a in sorted(r.run(queries), key=lambda a: int(a.query.query_id))]
    assert r.batch_size(100) == 8 and Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts,
                                                 DecodingConfig(beam_width=10, ks=[1, 10])).batch_size(100) == batching.AUTO_MAX
    assert runs["auto"] == runs[8]
