"""On a CUDA device (``pytest -m gpu``; skipped with the reason elsewhere): the untrained
baseline (model moved to the GPU before its index tokens are added) and the beam search under
sdpa and, where flash-attn is installed, flash_attention_2 — the Retriever switches the latter
to sdpa, so both give the same ranking.

The model runs in bf16 here: SDPA's kernels and the padding of a batch round differently with the
batch's shape, so rankings taken at another batch size or attention kernel are compared up to
near-ties (``decoding.retrieval.rankings_agree`` at ``NEAR_TIE``), never for exact equality; the
evaluation's fingerprint records the batch size for such models (evaluation/fingerprint.py:
``decoding_identity``). Not yet run on a GPU: no CUDA device was available when written."""

from __future__ import annotations

import importlib.util

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

QUERIES = ["check whether a link is safe", "convert euros to dollars", "what is the weather in Paris"]
NEAR_TIE = 0.02
"""Score tolerance (summed log-prob / length) under which two rankings may swap items: bf16 has 8
mantissa bits, so a hidden state's rounding moves a fp32 logit by up to ~2^-8 of its size."""


def _agree(a, b) -> bool:
    from toolsense.decoding.retrieval import rankings_agree

    return len(a) == len(b) and all(rankings_agree(x.constrained, y.constrained, NEAR_TIE) for x, y in zip(a, b))


def _dec():
    from toolsense.decoding.config import DecodingConfig

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
    assert _agree(out, ref)


def test_auto_batch_size_on_the_gpu_ranks_as_batch_8():
    """decoding.batch_size=auto on a GPU sizes above the CPU's 8 (tiny_random leaves almost all the
    memory free: the ceiling) and ranks exactly as batches of 8."""
    from toolsense.catalog import Query
    from toolsense.decoding import batching
    from toolsense.decoding.config import DecodingConfig
    from toolsense.decoding.retrieval import Retriever

    ev = _untrained()
    queries = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES * 6)]
    runs = {}
    for b in ("auto", 8):
        r = Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts, DecodingConfig(beam_width=10, batch_size=b))
        runs[b] = sorted(r.run(queries), key=lambda a: int(a.query.query_id))
    assert r.batch_size(100) == 8 and Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts,
                                                 DecodingConfig(beam_width=10)).batch_size(100) == batching.AUTO_MAX
    assert _agree(runs["auto"], runs[8])  # another batch shape: equal up to near-ties


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_a_faster_lm_head_ranks_as_the_fp32_head_up_to_near_ties(precision):
    from toolsense.catalog import Query
    from toolsense.decoding.config import DecodingConfig
    from toolsense.decoding.retrieval import Retriever

    ev = _untrained()
    queries = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES)]
    runs = {p: list(Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts,
                              DecodingConfig(beam_width=10, batch_size=8, head_precision=p)).run(queries)) for p in ("fp32", precision)}
    assert _agree(runs["fp32"], runs[precision])


def test_the_fingerprint_records_the_batch_size_of_a_bf16_model_on_cuda():
    from toolsense.decoding.config import DecodingConfig
    from toolsense.evaluation.fingerprint import decoding_identity

    ev = _untrained()
    assert decoding_identity(DecodingConfig(batch_size=16), [1], ev)["batch_size"] == 16
