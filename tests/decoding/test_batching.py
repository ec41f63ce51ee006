"""``decoding.batch_size=auto``: 8 on a CPU (same rankings as a given 8), on a GPU the documented
rule over free memory (pinned by hand on a Llama-3-8B shape), halved when a batch still runs out
of memory; nonsense values refused naming the field."""

from __future__ import annotations

import logging

import pytest
import torch

from toolsense.catalog import Query
from toolsense.data.prompts import PromptConfig
from toolsense.decoding import batching
from toolsense.decoding.batching import auto_batch_size, bytes_per_query
from toolsense.decoding.config import check_batch_size
from toolsense.decoding.retrieval import Retriever
from toolsense.index import add_index_tokens, build_index, build_trie
from toolsense.models import ModelConfig, load_model_and_tokenizer

QUERIES = ["check whether a link is safe", "convert euros to dollars", "what is the weather in Paris", "translate hello",
           "find a recipe with eggs", "book a table for two", "how tall is the eiffel tower"]


def _dec(**kw):
    from toolsense.decoding.config import DecodingConfig

    return DecodingConfig(beam_width=6, **kw)


@pytest.fixture
def tiny(demo_catalog):
    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    index = build_index(demo_catalog, "structural")
    add_index_tokens(index, model, tok)
    return model.eval(), tok, index


def _retriever(tiny, **kw):
    model, tok, index = tiny
    return Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), _dec(**kw))


def _ranked(retriever):
    qs = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES)]
    return {r.query.query_id: ([x["tool"] for x in r.constrained], [x["text"] for x in r.free]) for r in retriever.run(qs)}


def test_auto_is_eight_on_a_cpu_and_ranks_as_eight(tiny):
    auto = _retriever(tiny)
    assert _dec().batch_size == "auto" and auto.batch_size(200) == batching.AUTO_CPU == 8
    assert _ranked(auto) == _ranked(_retriever(tiny, batch_size=8))


def _llama8b_meta():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=175_296, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False)
    with torch.device("meta"):
        return LlamaForCausalLM(cfg).to(torch.bfloat16)


def test_the_rule_on_a_llama3_8b_shape():
    """Llama-3-8B + ToolBench's 46,984 tokens (175,240 real rows), beam 50, a 120-token prompt,
    flat index (2 steps): per query 4x50x175,240x4 logits + 131,072 B/token x (120 + 2x50) KV +
    120 x (4x4096 + 2x14336) x 2 activations."""
    model = _llama8b_meta()
    per = bytes_per_query(model, 175_240, 50, 120, 2)
    assert per == 140_192_000 + 131_072 * 220 + 120 * 45_056 * 2 == 179_841_280
    head = 175_240 * 4096 * 4  # the LM head's fp32 copy, taken off the free memory first
    gib = 2**30
    assert auto_batch_size(model, 175_240, 50, 120, 2, free_bytes=20 * gib) == 48  # 0.5 x (20 GiB - head) / per = 51.7
    assert int(0.5 * (20 * gib - head) // per) == 51
    assert auto_batch_size(model, 175_240, 50, 120, 2, free_bytes=120 * gib) == batching.AUTO_MAX  # 350 -> the ceiling
    assert auto_batch_size(model, 175_240, 50, 120, 2, free_bytes=3 * gib) == 1  # below the head copy: one at a time
    assert auto_batch_size(model, 175_240, 50, 120, 2, free_bytes=head + 4 * per) == 2
    # a long free-form search (past TREE_MAX_STEPS) copies the cache per beam: the KV term grows 51 x (prompt + steps)
    assert bytes_per_query(model, 175_240, 50, 120, 20) == 140_192_000 + 131_072 * 51 * 140 + 120 * 45_056 * 2


def test_auto_halves_a_batch_that_runs_out_of_memory(tiny, monkeypatch, caplog):
    """Sized at 8 but the device holds only 3 queries: the 7 are rerun in halves of the failed
    batch (3), every query comes back once, ranked as a run at batch 3 (the same batches)."""
    want = _ranked(_retriever(tiny, batch_size=3))
    auto = _retriever(tiny)
    monkeypatch.setattr(auto, "batch_size", lambda prompt_tokens: 8)
    search = auto._search
    sizes = []

    def small_device(seqs, pad):
        sizes.append(len(seqs))
        if len(seqs) > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return search(seqs, pad)

    monkeypatch.setattr(auto, "_search", small_device)
    with caplog.at_level(logging.WARNING, logger="toolsense.decoding.retrieval"):
        got = _ranked(auto)
    assert got == want and sizes == [7, 3, 3, 1]
    assert "out of device memory at 7 queries; continuing at 3" in caplog.text
    fixed = _retriever(tiny, batch_size=8)
    monkeypatch.setattr(fixed, "_search", lambda seqs, pad: (_ for _ in ()).throw(torch.cuda.OutOfMemoryError("simulated")))
    with pytest.raises(torch.cuda.OutOfMemoryError):  # a batch size the user gave is never changed
        _ranked(fixed)


CUBLAS_ALLOC = "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"


def test_a_cublas_allocation_failure_is_out_of_memory_too(tiny, monkeypatch, caplog):
    """cuBLAS failing to allocate its workspace arrives as a plain RuntimeError: ``auto`` halves the
    batch as for torch's OutOfMemoryError; any other RuntimeError is raised as it is."""
    from toolsense.decoding.batching import is_out_of_memory

    assert is_out_of_memory(RuntimeError(CUBLAS_ALLOC)) and is_out_of_memory(torch.cuda.OutOfMemoryError("x"))
    assert is_out_of_memory(RuntimeError("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported"))
    assert (not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
            and not is_out_of_memory(ValueError(CUBLAS_ALLOC)))
    want = _ranked(_retriever(tiny, batch_size=3))
    auto = _retriever(tiny)
    monkeypatch.setattr(auto, "batch_size", lambda prompt_tokens: 8)
    search, sizes = auto._search, []

    def cublas_fails(seqs, pad):
        sizes.append(len(seqs))
        if len(seqs) > 4:
            raise RuntimeError(CUBLAS_ALLOC)
        return search(seqs, pad)

    monkeypatch.setattr(auto, "_search", cublas_fails)
    with caplog.at_level(logging.WARNING, logger="toolsense.decoding.retrieval"):
        assert _ranked(auto) == want and sizes == [7, 3, 3, 1]
    assert "out of device memory at 7 queries; continuing at 3" in caplog.text
    other = _retriever(tiny)
    monkeypatch.setattr(other, "_search", lambda seqs, pad: (_ for _ in ()).throw(RuntimeError("shapes cannot be multiplied")))
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        _ranked(other)


@pytest.mark.parametrize("value", [0, -3, True, "sideways", 2.5, None])
def test_nonsense_batch_sizes_are_refused_naming_the_field(value):
    with pytest.raises(ValueError, match=r"^decoding\.batch_size must be a positive integer or auto"):
        check_batch_size(value)
    assert check_batch_size(64) == 64 and check_batch_size("auto") == "auto"
