import math

import numpy as np
import pytest
import torch

from toolsense.evaluation.beam import TREE_MAX_STEPS, Prefill, beam_search, flat_constrained, prefill
from toolsense.evaluation.trie_tensors import TrieTensors
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
    beams = beam_search(model, pre, tt, 5, 2, constrained=True, share_prompt=False)
    assert beams.tools == [["S&&x", "S&&z", "S&&y"]]  # only 3 tools exist: 3 beams, never more
    assert beams.scores[0] == pytest.approx([math.log(0.2 * 0.9), math.log(0.1 * 0.99), math.log(0.15 * 0.5)], abs=1e-5)
    assert beams.sequences == [[[3, EOS], [5, EOS], [4, EOS]]]
    for fast in (flat_constrained(model, pre, tt, 5), beam_search(model, pre, tt, 5, 2, constrained=True)):
        assert fast.tools == beams.tools and fast.scores[0] == pytest.approx(beams.scores[0])


def test_free_form_keeps_text_beams_as_non_tools(toy):
    model, pre, tt = toy
    beams = beam_search(model, pre, tt, 2, 2, constrained=False)
    # 'a a' (0.35) beats x+EOS (0.18); 'a' then EOS (0.05) falls out of the 2 beams
    assert beams.tools == [[None, "S&&x"]]
    assert beams.scores[0] == pytest.approx([math.log(0.35), math.log(0.18)], abs=1e-5)
    assert beams.sequences == [[[A, A], [3, EOS]]]


def test_free_form_stops_ended_beams(toy):
    model, pre, tt = toy
    beams = beam_search(model, pre, tt, 3, 4, constrained=False)
    # x+EOS ended at step 2 and is carried with its score; text beams keep growing
    assert "S&&x" in beams.tools[0]
    i = beams.tools[0].index("S&&x")
    assert beams.sequences[0][i] == [3, EOS] and beams.scores[0][i] == pytest.approx(math.log(0.18), abs=1e-5)


def _prompts(tok, texts):
    from toolsense.data.prompts import PromptConfig, render_prompt, retrieval_messages
    from toolsense.evaluation.beam import left_pad
    from toolsense.evaluation.retrieval import encode

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
    assert all(len(t) == 50 and len(set(t)) == 50 for t in full.tools)
    for tools, seqs in zip(full.tools, full.sequences):
        assert [trie.lookup(s) for s in seqs] == tools


def _hierarchical(tiny_model, catalog, builder):
    """tiny_random with a hierarchical index of the demo catalog, prefilled on QUERIES."""
    model, tok = tiny_model
    params = {"branching": 4, "embeddings": np.random.default_rng(0).normal(size=(len(catalog), 8))} if builder == "clustered" else {}
    index = build_index(catalog, builder, **params)
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
    scores as the textbook search that copies the cache per beam, for several steps, and leave
    the prompt cache as it was."""
    model, index, trie, tt, pre = _hierarchical(tiny_model, demo_catalog, builder)
    plen = pre.cache.get_seq_length()
    for constrained, steps in ((True, index.depth() + 1), (False, index.depth() + 3), (False, TREE_MAX_STEPS + 1)):
        full = beam_search(model, pre, tt, 12, steps, constrained=constrained, share_prompt=False)
        tree = beam_search(model, pre, tt, 12, steps, constrained=constrained)
        assert tree.sequences == full.sequences and tree.tools == full.tools
        assert np.allclose(tree.scores, full.scores, atol=1e-4)
        assert pre.cache.get_seq_length() == plen
    assert any(len(s) == TREE_MAX_STEPS + 1 for seqs in full.sequences for s in seqs)  # free-form really ran every step


@pytest.mark.parametrize("builder", ["flat", "structural"])
def test_shared_prefix_prefill_gives_the_same_search(tiny_model, demo_catalog, builder):
    """Encoding the prompts' common prefix once (pads between it and each prompt's own tokens)
    gives the same next-token log-probs and the same beams as the plain left-padded prefill."""
    from toolsense.data.prompts import PromptConfig, render_prompt, retrieval_messages
    from toolsense.evaluation.beam import common_prefix_length, prefill_shared
    from toolsense.evaluation.retrieval import encode

    model, tok = tiny_model
    index = build_index(demo_catalog, builder)
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
