import math

import numpy as np
import pytest
import torch

from toolsense.decoding.beam import TREE_MAX_STEPS, Prefill, beam_search, flat_constrained, prefill
from toolsense.decoding.trie_tensors import TrieTensors
from toolsense.index import Trie, add_index_tokens, build_index, build_trie

EOS, A = 2, 0


def _table(rows: dict[int, dict[int, float]], vocab: int = 8) -> torch.Tensor:
    """Log-prob rows: the given probabilities, the rest spread evenly."""
    t = torch.empty(vocab, vocab)
    for tok in range(vocab):
        p = rows.get(tok, {})
        rest = (1 - sum(p.values())) / (vocab - len(p))
        t[tok] = torch.tensor([math.log(p.get(j, rest)) for j in range(vocab)])
    return t


@pytest.fixture
def toy(bigram):
    # tokens: 0 'a' (text), 1 prompt, 2 EOS, 3/4/5 the flat tool tokens of x/y/z
    table = _table({1: {A: 0.5, 3: 0.2, 4: 0.15, 5: 0.1}, 0: {A: 0.7, EOS: 0.1}, 3: {EOS: 0.9}, 4: {EOS: 0.5}, 5: {EOS: 0.99}})
    trie = Trie.build({"S&&x": [3], "S&&y": [4], "S&&z": [5]}, EOS)
    model = bigram(table)
    pre = Prefill(torch.log_softmax(table[1], -1)[None], bigram.NoCache(), torch.ones(1, 1, dtype=torch.long))
    return model, pre, TrieTensors.from_trie(trie, 8)


def test_constrained_beam_search_ranks_by_full_sequence_probability(toy):
    model, pre, tt = toy
    beams = beam_search(model, pre, tt, 5, 2, constrained=True, length_penalty=0.0, share_prompt=False)
    assert beams.tools == [["S&&x", "S&&z", "S&&y"]]  # only 3 tools exist: 3 beams, never more
    sums = [math.log(0.2 * 0.9), math.log(0.1 * 0.99), math.log(0.15 * 0.5)]
    assert beams.scores[0] == pytest.approx(sums, abs=1e-5) and beams.logprobs[0] == pytest.approx(sums, abs=1e-5)
    assert beams.sequences == [[[3, EOS], [5, EOS], [4, EOS]]]
    for fast in (flat_constrained(model, pre, tt, 5, 0.0), beam_search(model, pre, tt, 5, 2, True, 0.0)):
        assert fast.tools == beams.tools and fast.scores[0] == pytest.approx(beams.scores[0])
    # flat ids all have length 2 (id + EOS): length_penalty=1 halves every score and keeps the order
    for lp1 in (flat_constrained(model, pre, tt, 5), beam_search(model, pre, tt, 5, 2, True, 1.0)):
        assert lp1.tools == beams.tools and lp1.scores[0] == pytest.approx([s / 2 for s in sums], abs=1e-5)
        assert lp1.logprobs[0] == pytest.approx(sums, abs=1e-5)


def test_free_form_keeps_text_beams_as_non_tools(toy):
    model, pre, tt = toy
    beams = beam_search(model, pre, tt, 2, 2, constrained=False, length_penalty=0.0)
    # 'a a' (0.35) beats x+EOS (0.18); 'a' then EOS (0.05) falls out of the 2 beams
    assert beams.tools == [[None, "S&&x"]]
    assert beams.scores[0] == pytest.approx([math.log(0.35), math.log(0.18)], abs=1e-5)
    assert beams.sequences == [[[A, A], [3, EOS]]]


def test_free_form_finished_hypotheses_follow_hf(toy):
    """HF's bookkeeping: finished ids leave the 3 live beams (which keep growing as text); only
    an EOS among the best 3 continuations of a step is kept ('a'+EOS, 0.05, is 4th at step 2);
    the step limit finishes the live beams; the best 3 hypotheses are returned."""
    model, pre, tt = toy
    beams = beam_search(model, pre, tt, 3, 4, constrained=False, length_penalty=0.0)
    assert beams.sequences == [[[3, EOS], [A, A, A, A], [4, EOS]]] and beams.tools == [["S&&x", None, "S&&y"]]
    assert beams.scores[0] == pytest.approx([math.log(0.18), math.log(0.5 * 0.7**3), math.log(0.075)], abs=1e-5)
    normed = beam_search(model, pre, tt, 3, 4, constrained=False, length_penalty=1.0)
    # per token, the 4-token texts 'a a a a' (0.1715) and 'a a a'+EOS (0.0245) overtake y+EOS
    assert normed.sequences == [[[A, A, A, A], [3, EOS], [A, A, A, EOS]]]
    assert normed.scores[0] == pytest.approx([math.log(0.1715) / 4, math.log(0.18) / 2, math.log(0.0245) / 4], abs=1e-5)
    assert normed.logprobs[0] == pytest.approx([math.log(0.1715), math.log(0.18), math.log(0.0245)], abs=1e-5)


def _bigram_search(bigram, rows, ids, width, steps, length_penalty):
    """Constrained search over a bigram table (prompt token 1) and a trie of ``ids``."""
    table = _table(rows)
    pre = Prefill(torch.log_softmax(table[1], -1)[None], bigram.NoCache(), torch.ones(1, 1, dtype=torch.long))
    tt = TrieTensors.from_trie(Trie.build(ids, EOS), 8)
    return beam_search(bigram(table), pre, tt, width, steps, True, length_penalty)


def test_length_penalty_reorders_ids_of_different_depth(bigram):
    """s (1 token, p = 0.5 * 0.4 = 0.2) beats l (2 tokens, 0.4 * 0.9 * 0.5 = 0.18) by summed
    log-prob; per generated token (EOS counted) l wins: log(0.18) / 3 > log(0.2) / 2."""
    rows = {1: {3: 0.5, 4: 0.4}, 3: {EOS: 0.4}, 4: {5: 0.9, 6: 0.05}, 5: {EOS: 0.5}, 6: {EOS: 0.9}}
    ids = {"S&&s": [3], "S&&l": [4, 5], "S&&t": [4, 6]}
    plain = _bigram_search(bigram, rows, ids, 3, 3, 0.0)
    assert plain.tools == [["S&&s", "S&&l", "S&&t"]]
    sums = [math.log(0.2), math.log(0.18), math.log(0.018)]
    assert plain.scores[0] == pytest.approx(sums, abs=1e-5) and plain.logprobs[0] == pytest.approx(sums, abs=1e-5)
    hf = _bigram_search(bigram, rows, ids, 3, 3, 1.0)
    assert hf.tools == [["S&&l", "S&&s", "S&&t"]]
    assert hf.scores[0] == pytest.approx([math.log(0.18) / 3, math.log(0.2) / 2, math.log(0.018) / 3], abs=1e-5)
    assert hf.logprobs[0] == pytest.approx([sums[1], sums[0], sums[2]], abs=1e-5)


def test_search_stops_as_hf_does_once_the_finished_list_is_full(bigram):
    """HF's early stop (``early_stopping=False``): with the finished list full, a query stops when
    its best live beam, normalised by the *current* length, cannot beat the worst kept score.
    Width 1: s ends (log 0.243 / 2); the live s·v (log 0.225 / 2) looks no better, so the search
    stops, though s·v+EOS would score log(0.2228) / 3, higher. Width 2 keeps a free slot: it goes on."""
    rows = {1: {3: 0.9}, 3: {EOS: 0.27, 7: 0.25}, 7: {EOS: 0.99}}
    ids = {"S&&s": [3], "S&&v": [3, 7]}
    one = _bigram_search(bigram, rows, ids, 1, 3, 1.0)
    assert one.tools == [["S&&s"]] and one.scores[0] == pytest.approx([math.log(0.243) / 2], abs=1e-5)
    two = _bigram_search(bigram, rows, ids, 2, 3, 1.0)
    assert two.tools == [["S&&v", "S&&s"]]
    assert two.scores[0] == pytest.approx([math.log(0.9 * 0.25 * 0.99) / 3, math.log(0.243) / 2], abs=1e-5)


def _prompts(tok, texts):
    from toolsense.data.prompts import PromptConfig, render_prompt, retrieval_messages
    from toolsense.decoding.beam import left_pad
    from toolsense.decoding.retrieval import encode

    ids = encode(tok, [render_prompt(tok, retrieval_messages(t, PromptConfig())) for t in texts])
    return left_pad(ids, tok.pad_token_id, "cpu")


QUERIES = ["weather in Paris now", "convert 10 usd to eur please", "news", "translate hello into Spanish and French today"]


def test_fast_flat_path_equals_full_beam_search_on_tiny_random(tiny_model, demo_catalog):
    model, tok = tiny_model
    index = build_index(demo_catalog, "flat")
    add_index_tokens(index, model, tok)
    trie = build_trie(index, tok)
    tt = TrieTensors.from_trie(trie, model.get_output_embeddings().weight.shape[0])
    pre = prefill(model.eval(), *_prompts(tok, QUERIES))
    # the full search with one cache row per beam (no shared-prompt shortcut) is the reference
    full = beam_search(model, pre, tt, 50, 2, constrained=True, share_prompt=False)
    fast = flat_constrained(model, pre, tt, 50)
    shared = beam_search(model, pre, tt, 50, 2, constrained=True)
    assert shared.tools == full.tools and np.allclose(shared.scores, full.scores, atol=1e-4)
    free_full = beam_search(model, pre, tt, 50, 2, constrained=False, share_prompt=False)
    free_shared = beam_search(model, pre, tt, 50, 2, constrained=False)
    assert free_shared.sequences == free_full.sequences and np.allclose(free_shared.scores, free_full.scores, atol=1e-4)
    assert fast.tools == full.tools
    assert np.allclose(fast.scores, full.scores, atol=1e-4)
    # every flat id has length 2: the plain sum (length_penalty 0) ranks exactly as HF's default
    plain = flat_constrained(model, pre, tt, 50, 0.0)
    assert plain.tools == fast.tools and np.allclose(plain.scores, 2 * np.array(fast.scores), atol=1e-5)
    assert beam_search(model, pre, tt, 50, 2, True, 0.0, share_prompt=False).tools == fast.tools
    assert all(len(t) == 50 and len(set(t)) == 50 for t in full.tools)
    for tools, seqs in zip(full.tools, full.sequences):
        assert [trie.lookup(s) for s in seqs] == tools


def _build(catalog, builder):
    """The demo catalog's index; clustered: branching 4 over seeded random embeddings (ids of 3-5 tokens)."""
    emb = np.random.default_rng(0).normal(size=(len(catalog), 8))
    params = {"branching": 4, "seed": 0, "embeddings": emb} if builder == "clustered" else {}
    return build_index(catalog, builder, **params)


def _hierarchical(tiny_model, catalog, builder):
    """tiny_random with a hierarchical index of the demo catalog, prefilled on QUERIES."""
    model, tok = tiny_model
    index = _build(catalog, builder)
    add_index_tokens(index, model, tok)
    trie = build_trie(index, tok)
    tt = TrieTensors.from_trie(trie, model.get_output_embeddings().weight.shape[0])
    return model, index, trie, tt, prefill(model.eval(), *_prompts(tok, QUERIES))


@pytest.mark.parametrize("builder", ["structural", "clustered"])
def test_hierarchical_constrained_outputs_are_always_valid_tools(tiny_model, demo_catalog, builder):
    model, index, trie, tt, pre = _hierarchical(tiny_model, demo_catalog, builder)
    beams = beam_search(model, pre, tt, 20, index.depth() + 1, constrained=True)
    for tools, seqs, scores in zip(beams.tools, beams.sequences, beams.scores):
        assert len(tools) == 20 and None not in tools and len(set(tools)) == 20
        assert [trie.lookup(s) for s in seqs] == tools
        assert scores == sorted(scores, reverse=True)
    free = beam_search(model, pre, tt, 20, index.depth() + 1, constrained=False)
    for tools, seqs in zip(free.tools, free.sequences):
        assert [trie.lookup(s) for s in seqs] == tools  # a free output is a tool only if exactly id + EOS


@pytest.mark.parametrize("builder", ["structural", "clustered"])
def test_shared_prompt_tree_search_equals_expanded_cache_search(tiny_model, demo_catalog, builder):
    """Beams decoded over one shared prompt cache with lineage masks give the same beams and
    scores as the textbook search that copies the cache per beam, for several steps and both
    rankings, and leave the prompt cache as it was."""
    model, index, trie, tt, pre = _hierarchical(tiny_model, demo_catalog, builder)
    plen = pre.cache.get_seq_length()
    runs = ((True, index.depth() + 1, 1.0), (True, index.depth() + 1, 0.0), (False, index.depth() + 3, 1.0),
            (False, TREE_MAX_STEPS + 1, 0.0))
    for constrained, steps, lp in runs:
        full = beam_search(model, pre, tt, 12, steps, constrained, lp, share_prompt=False)
        tree = beam_search(model, pre, tt, 12, steps, constrained, lp)
        assert tree.sequences == full.sequences and tree.tools == full.tools
        assert np.allclose(tree.scores, full.scores, atol=1e-4)
        assert pre.cache.get_seq_length() == plen
    assert any(len(s) == TREE_MAX_STEPS + 1 for seqs in full.sequences for s in seqs)  # free-form really ran every step


def _hf_generate(model, trie, prompt: list[int], width: int, steps: int, length_penalty: float, pad_id: int):
    """Hugging Face's constrained beam search on one unpadded prompt: (tools, sequences_scores)."""
    def allowed(_, sent):
        return trie.allowed(sent[len(prompt):].tolist()) or [trie.eos_id]  # a dead (-inf) beam: anything

    out = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                         num_beams=width, num_return_sequences=width, length_penalty=length_penalty,
                         max_new_tokens=steps, do_sample=False, eos_token_id=trie.eos_id, pad_token_id=pad_id,
                         prefix_allowed_tokens_fn=allowed, output_scores=True, return_dict_in_generate=True)
    gen = [s[len(prompt):].tolist() for s in out.sequences]  # shorter hypotheses are padded after their EOS
    tools = [trie.lookup(g[: g.index(trie.eos_id) + 1]) for g in gen]
    return tools, out.sequences_scores.tolist()


def test_constrained_search_equals_hf_generate_on_a_clustered_index(tiny_model, demo_catalog):
    """On a variable-depth index (ids of 3-5 tokens), our constrained top-8 — shared-prefix
    prefill + tree decoding, and plain prefill + per-beam cache — equals HF's
    ``generate(num_beams=8, num_return_sequences=8, prefix_allowed_tokens_fn=<trie>)``: same tools
    in the same order, same scores, for length_penalty 1 (HF's default) and 0. With 0 the
    ranking is the plain summed log-prob, which orders these queries differently from HF's default."""
    from toolsense.data.prompts import PromptConfig, render_prompt, retrieval_messages
    from toolsense.decoding.beam import prefill_shared
    from toolsense.decoding.retrieval import encode

    model, index, trie, tt, pre = _hierarchical(tiny_model, demo_catalog, "clustered")
    tok = tiny_model[1]
    assert len({len(p) for p in index.paths.values()}) > 1  # really variable depth
    ids = encode(tok, [render_prompt(tok, retrieval_messages(t, PromptConfig())) for t in QUERIES])
    shared = prefill_shared(model, ids, tok.pad_token_id, "cpu")
    steps, width = index.depth() + 1, 8
    ours = {}
    for lp in (1.0, 0.0):
        ours[lp] = tree = beam_search(model, shared, tt, width, steps, True, lp)
        full = beam_search(model, pre, tt, width, steps, True, lp, share_prompt=False)
        for q, prompt in enumerate(ids):
            hf_tools, hf_scores = _hf_generate(model, trie, prompt, width, steps, lp, tok.pad_token_id)
            assert tree.tools[q] == hf_tools and full.tools[q] == hf_tools
            assert tree.scores[q] == pytest.approx(hf_scores, abs=1e-4) and full.scores[q] == pytest.approx(hf_scores, abs=1e-4)
    for q in range(len(QUERIES)):
        lengths = [len(s) for s in ours[1.0].sequences[q]]
        assert ours[1.0].scores[q] == pytest.approx([lp / n for lp, n in zip(ours[1.0].logprobs[q], lengths)], abs=1e-5)
        assert ours[0.0].scores[q] == ours[0.0].logprobs[q] == sorted(ours[0.0].logprobs[q], reverse=True)
        assert ours[0.0].tools[q] != ours[1.0].tools[q]


def test_retriever_threads_decoding_length_penalty(tiny_model, demo_catalog):
    """``decoding.length_penalty`` reaches both searches of the Retriever; each output records
    the ranking score and the summed log-prob (equal at 0; score = logprob / length at 1)."""
    from toolsense.catalog import Query
    from toolsense.data.prompts import PromptConfig
    from toolsense.decoding.config import DecodingConfig
    from toolsense.decoding.retrieval import Retriever

    model, tok = tiny_model
    index = _build(demo_catalog, "clustered")
    add_index_tokens(index, model, tok)
    trie = build_trie(index, tok)
    queries = [Query(str(i), t, ("x",)) for i, t in enumerate(QUERIES[:2])]
    out = {}
    for lp in (0.0, 1.0):
        dec = DecodingConfig(beam_width=8, length_penalty=lp)
        out[lp] = list(Retriever(model.eval(), tok, trie, index.depth(), PromptConfig(), dec).run(queries))
    for r0, r1 in zip(out[0.0], out[1.0]):
        for x in r0.constrained + r0.free:
            assert x["score"] == x["logprob"]
        for x in r1.constrained:
            assert x["score"] == pytest.approx(x["logprob"] / (len(index.paths[x["tool"]]) + 1), abs=1e-4)
        assert [x["tool"] for x in r0.constrained] != [x["tool"] for x in r1.constrained]
    with pytest.raises(ValueError, match="decoding.length_penalty must be a finite number, got nan"):
        DecodingConfig(length_penalty=float("nan"))


@pytest.mark.parametrize("builder", ["flat", "structural", "clustered"])
def test_shared_prefix_prefill_gives_the_same_search(tiny_model, demo_catalog, builder):
    """Encoding the prompts' common prefix once (pads between it and each prompt's own tokens)
    gives the same next-token log-probs and the same beams as the plain left-padded prefill."""
    from toolsense.data.prompts import PromptConfig, render_prompt, retrieval_messages
    from toolsense.decoding.beam import common_prefix_length, prefill_shared
    from toolsense.decoding.retrieval import encode

    model, tok = tiny_model
    index = _build(demo_catalog, builder)
    add_index_tokens(index, model, tok)
    tt = TrieTensors.from_trie(build_trie(index, tok), model.get_output_embeddings().weight.shape[0])
    ids = encode(tok, [render_prompt(tok, retrieval_messages(t, PromptConfig())) for t in QUERIES])
    shared = common_prefix_length(ids)
    assert shared >= 10 and all(len(s) > shared for s in ids)  # system prompt + template, then the query
    plain = prefill(model.eval(), *_prompts(tok, QUERIES))
    pre = prefill_shared(model, ids, tok.pad_token_id, "cpu")
    short = min(range(len(ids)), key=lambda i: len(ids[i]))
    row = pre.attention_mask[short].tolist()
    assert len(row) == max(map(len, ids)) and row[:shared] == [1] * shared and row[shared] == 0  # pads after the prefix
    torch.testing.assert_close(pre.logp, plain.logp, rtol=1e-4, atol=1e-4)
    for constrained in (True, False):
        a = beam_search(model, plain, tt, 10, index.depth() + 1, constrained=constrained)
        b = beam_search(model, pre, tt, 10, index.depth() + 1, constrained=constrained)
        assert b.sequences == a.sequences and np.allclose(b.scores, a.scores, atol=1e-4)
    if builder == "flat":
        assert flat_constrained(model, pre, tt, 10).tools == flat_constrained(model, plain, tt, 10).tools
    assert common_prefix_length([[1, 2, 3], [1, 2, 3]]) == 2 and common_prefix_length([[1, 2], [3]]) == 0
