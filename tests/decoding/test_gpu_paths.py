"""The parts of the GPU path a CPU can check: the LM head in fp32 over the tokenizer's real
tokens (bf16 logits tie; the rows that pad the vocabulary to a multiple of 64 are no token), and
the Retriever under an attention implementation that cannot read its 4D masks."""

from __future__ import annotations

import logging

import pytest
import torch

from toolsense.catalog import Query
from toolsense.data.prompts import PromptConfig, render_prompt, retrieval_messages
from toolsense.decoding.beam import beam_search, left_pad, prefill
from toolsense.decoding.head import fp32_head
from toolsense.decoding.retrieval import Retriever, encode
from toolsense.decoding.trie_tensors import TrieTensors
from toolsense.index import add_index_tokens, build_index, build_trie
from toolsense.models import ModelConfig, load_model_and_tokenizer

QUERIES = ["check whether a link is safe", "convert euros to dollars", "what is the weather in Paris", "translate hello"]


def _loaded(dtype: str, demo_catalog, attn: str | None = None):
    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype=dtype, attn_implementation=attn))
    index = build_index(demo_catalog, "structural")
    add_index_tokens(index, model, tok)
    return model.eval(), tok, index


def _prompts(tok):
    return encode(tok, [render_prompt(tok, retrieval_messages(q, PromptConfig())) for q in QUERIES])


def _dec(**kw):
    from toolsense.decoding.config import DecodingConfig

    return DecodingConfig(beam_width=6, **kw)


def test_fp32_head_scores_in_fp32_over_real_tokens_and_restores_the_head(demo_catalog):
    model, tok, _ = _loaded("bfloat16", demo_catalog)
    ids, mask = left_pad(_prompts(tok), tok.pad_token_id, "cpu")
    head = model.get_output_embeddings()
    assert head.weight.shape[0] > len(tok)  # padded to a multiple of 64
    plain = model(input_ids=ids, attention_mask=mask, logits_to_keep=1, output_hidden_states=True)
    with fp32_head(model, len(tok)):
        up = model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits[:, -1]
    hidden = plain.hidden_states[-1][:, -1]
    assert up.dtype == torch.float32 and up.shape[-1] == len(tok)
    torch.testing.assert_close(up, hidden.float() @ head.weight[: len(tok)].float().T)
    # bf16 rounding ties logits that fp32 tells apart: the top-50 cut would fall among ties
    bf = plain.logits[:, -1, : len(tok)]
    assert bf.dtype == torch.bfloat16
    assert all(len(torch.unique(bf[q])) < len(torch.unique(up[q])) for q in range(len(QUERIES)))
    again = model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits
    assert again.dtype == torch.bfloat16 and again.shape[-1] == head.weight.shape[0] and "forward" not in head.__dict__


def test_padding_rows_never_reach_the_free_form_search(demo_catalog):
    """Rows past len(tokenizer) made to win every step: a search over all rows emits them, the
    Retriever's (head cut at the tokenizer's length) returns exactly what it returns with zero rows."""
    model, tok, index = _loaded("float32", demo_catalog)
    n, rows = len(tok), model.get_output_embeddings().weight.shape[0]
    queries = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES)]
    dec = _dec()
    clean = list(Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), dec).run(queries))
    ids, mask = left_pad(_prompts(tok), tok.pad_token_id, "cpu")
    hidden = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1][:, -1]
    with torch.no_grad():
        model.get_output_embeddings().weight[n:] = 50 * torch.nn.functional.normalize(hidden.mean(0), dim=0)
    tt_all = TrieTensors.from_trie(build_trie(index, tok), rows)
    wide = beam_search(model, prefill(model, ids, mask), tt_all, 6, 3, constrained=False)
    assert any(t >= n for q in wide.sequences for s in q for t in s)  # the adversarial rows would win
    padded = list(Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), dec).run(queries))
    assert [r.free for r in padded] == [r.free for r in clean] and [r.constrained for r in padded] == [r.constrained for r in clean]


def test_retriever_switches_flash_attention_to_sdpa_and_says_so(demo_catalog, caplog):
    model, tok, index = _loaded("float32", demo_catalog, attn="sdpa")
    queries = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES)]
    ref = list(Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), _dec()).run(queries))
    model.config._attn_implementation_internal = "flash_attention_2"  # as load_run reloads an FA2-trained run
    with caplog.at_level(logging.WARNING, logger="toolsense.decoding.retrieval"):
        r = Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), _dec())
    assert r.attn_implementation == "sdpa" == model.config._attn_implementation
    assert "flash_attention_2 cannot read the search's 4D attention masks; switching this model to sdpa" in caplog.text
    assert [x.constrained for x in r.run(queries)] == [x.constrained for x in ref]


def test_eager_attention_reads_the_masks_and_gives_sdpa_s_beams(demo_catalog):
    queries = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES)]
    out = {}
    for attn in ("sdpa", "eager"):
        model, tok, index = _loaded("float32", demo_catalog, attn=attn)
        r = Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), _dec())
        assert r.attn_implementation == attn
        out[attn] = list(r.run(queries))
    for a, b in zip(out["sdpa"], out["eager"]):
        assert [x["tool"] for x in a.constrained] == [x["tool"] for x in b.constrained]
        assert [x["score"] for x in a.constrained] == pytest.approx([x["score"] for x in b.constrained], abs=1e-4)


def test_head_precisions_compute_fp32_logits_from_their_inputs(demo_catalog):
    """decoding.head_precision: tf32 is fp32 off CUDA (bit for bit); bf16 multiplies bf16-rounded
    hidden states and weights with fp32 accumulation and output (no bf16 rounding of the logits:
    no ties beyond fp32's); every mode restores the head."""
    model, tok, _ = _loaded("bfloat16", demo_catalog)
    ids, mask = left_pad(_prompts(tok), tok.pad_token_id, "cpu")
    head = model.get_output_embeddings()
    hidden = model(input_ids=ids, attention_mask=mask, logits_to_keep=1, output_hidden_states=True).hidden_states[-1][:, -1]
    logits = {}
    for precision in ("fp32", "tf32", "bf16"):
        with fp32_head(model, len(tok), precision):
            logits[precision] = model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits[:, -1]
        assert "forward" not in head.__dict__ and logits[precision].dtype == torch.float32
    assert torch.equal(logits["tf32"], logits["fp32"])
    w = head.weight[: len(tok)]
    torch.testing.assert_close(logits["bf16"], hidden.bfloat16().float() @ w.bfloat16().float().T)
    bf = hidden.bfloat16() @ w.bfloat16().T  # a plain bf16 matmul rounds its output: ties
    assert all(len(torch.unique(bf[q])) < len(torch.unique(logits["bf16"][q])) for q in range(len(QUERIES)))


def test_rankings_under_a_bf16_head_agree_with_fp32_up_to_near_ties(demo_catalog):
    from toolsense.decoding.retrieval import rankings_agree

    model, tok, index = _loaded("float32", demo_catalog)
    queries = [Query(str(i), q, ("x",)) for i, q in enumerate(QUERIES)]
    runs = {p: list(Retriever(model, tok, build_trie(index, tok), index.depth(), PromptConfig(), _dec(head_precision=p)).run(queries))
            for p in ("fp32", "bf16")}
    assert all(rankings_agree(a.constrained, b.constrained, tol=0.05) for a, b in zip(runs["fp32"], runs["bf16"]))
    assert not all(a.constrained == b.constrained for a, b in zip(runs["fp32"], runs["bf16"]))  # the scores moved
    # the rule itself: a swap of two items 0.01 apart passes at tol 0.01, fails at 0.001; another item never passes
    a = [{"tool": "x", "score": -1.0}, {"tool": "y", "score": -1.01}, {"tool": "z", "score": -3.0}]
    swapped = [{"tool": "y", "score": -1.0}, {"tool": "x", "score": -1.01}, {"tool": "z", "score": -3.0}]
    assert rankings_agree(a, swapped, tol=0.01) and not rankings_agree(a, swapped, tol=0.001)
    assert not rankings_agree(a, [a[0], {"tool": "q", "score": -1.01}, a[2]], tol=0.01) and not rankings_agree(a, a[:2], tol=1)


def test_the_batch_size_joins_the_fingerprint_only_for_16_bit_models_on_cuda():
    """Folders written by CPU or fp32 evaluations keep their fingerprint (they resume at any batch
    size); on CUDA in bf16/fp16 the batch size is part of what produced the rankings."""
    from types import SimpleNamespace

    from toolsense.decoding.config import DecodingConfig
    from toolsense.evaluation.fingerprint import decoding_identity

    def ev(is_cuda: bool, width: int):
        p = SimpleNamespace(is_cuda=is_cuda, element_size=lambda: width)
        return SimpleNamespace(model=SimpleNamespace(parameters=lambda: iter([p])))

    dec = DecodingConfig(beam_width=10, batch_size=32, head_precision="fp32")  # auto's tf32 on CUDA: the test above
    plain = decoding_identity(dec, [1, 5])
    assert "batch_size" not in plain and "head_precision" not in plain
    assert decoding_identity(dec, [1, 5], ev(False, 2)) == plain == decoding_identity(dec, [1, 5], ev(True, 4))
    assert decoding_identity(dec, [1, 5], ev(True, 2)) == {**plain, "batch_size": 32}
    assert decoding_identity(DecodingConfig(beam_width=10, head_precision="bf16"), [1, 5])["head_precision"] == "bf16"
    with pytest.raises(ValueError, match="decoding.head_precision"):
        DecodingConfig(head_precision="fp8")


def test_head_precision_auto_is_tf32_on_cuda_and_fp32_on_a_cpu_and_keeps_cpu_fingerprints():
    """``decoding.head_precision=auto`` (the default) resolves on the model's device; the fingerprint records the
    resolved mode, so a CPU folder written while fp32 was the default still resumes, and a CUDA one says tf32."""
    from types import SimpleNamespace

    from toolsense.decoding.config import DecodingConfig, HeadPrecision
    from toolsense.evaluation.fingerprint import decoding_identity

    assert DecodingConfig().head_precision == "auto"
    assert HeadPrecision.auto.resolve("cuda") == "tf32" and HeadPrecision.auto.resolve("cpu") == "fp32"
    assert HeadPrecision.bf16.resolve("cpu") == "bf16" and HeadPrecision.fp32.resolve("cuda") == "fp32"

    def ev(is_cuda: bool):
        p = SimpleNamespace(is_cuda=is_cuda, element_size=lambda: 4)
        return SimpleNamespace(model=SimpleNamespace(parameters=lambda: iter([p])))

    auto, fp32 = DecodingConfig(beam_width=10), DecodingConfig(beam_width=10, head_precision="fp32")
    on_cpu = decoding_identity(auto, [1, 5], ev(False))
    assert on_cpu == decoding_identity(fp32, [1, 5], ev(False)) == decoding_identity(auto, [1, 5]) and "head_precision" not in on_cpu
    assert decoding_identity(auto, [1, 5], ev(True)) == {**on_cpu, "head_precision": "tf32"}
    assert decoding_identity(fp32, [1, 5], ev(True)) == on_cpu  # fp32 asked for on CUDA: fp32 runs


def test_head_precision_auto_multiplies_in_fp32_on_a_cpu(demo_catalog):
    model, tok, _ = _loaded("bfloat16", demo_catalog)
    ids, mask = left_pad(_prompts(tok), tok.pad_token_id, "cpu")
    logits = {}
    for precision in ("fp32", "auto"):
        with fp32_head(model, len(tok), precision):
            logits[precision] = model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits[:, -1]
    assert torch.equal(logits["auto"], logits["fp32"]) and logits["auto"].dtype == torch.float32


def _widest_output(fn) -> int:
    """The largest last dimension of any tensor an op makes while ``fn`` runs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    widest = [0]

    class Widest(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor) and t.dim():
                    widest[0] = max(widest[0], t.shape[-1])
            return out

    with Widest():
        fn()
    return widest[0]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_eos_read_holds_a_slice_of_the_vocabulary_and_ranks_as_the_whole(demo_catalog, monkeypatch, dtype):
    """The flat fast path reads log p(EOS) after its B candidates through the head a slice of the vocabulary at
    a time (``head.VOCAB_SLICE``, 256 here): no op makes a tensor as wide as the vocabulary, and the rankings
    and scores are those of the whole-vocabulary forward (the path before, still taken by models whose
    logits are not the head's output: ``beam.LOGIT_TRANSFORMS``)."""
    import numpy as np

    from toolsense.decoding import beam, head

    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype=dtype))
    index = build_index(demo_catalog, "flat")
    add_index_tokens(index, model, tok)
    model.eval()
    tt = TrieTensors.from_trie(build_trie(index, tok), len(tok))
    monkeypatch.setattr(head, "VOCAB_SLICE", 256)
    with fp32_head(model, len(tok)):
        pre = prefill(model, *left_pad(_prompts(tok), tok.pad_token_id, "cpu"))
        sliced = beam.flat_constrained(model, pre, tt, 20)
        widest = _widest_output(lambda: beam.flat_constrained(model, pre, tt, 20))
        with monkeypatch.context() as m:
            m.setattr(beam, "_plain_decoder", lambda model: None)
            whole = beam.flat_constrained(model, pre, tt, 20)
            widest_whole = _widest_output(lambda: beam.flat_constrained(model, pre, tt, 20))
    assert widest < len(tok) <= widest_whole
    assert sliced.tools == whole.tools and len(sliced.tools[0]) == 20
    assert np.allclose(sliced.scores, whole.scores, rtol=0, atol=1e-5)
    model.config.final_logit_softcapping = 30.0  # Gemma 2's soft-capping: the head's output is not the logits
    assert beam._plain_decoder(model) is None
