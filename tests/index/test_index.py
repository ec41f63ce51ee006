import json

import numpy as np
import pytest
import torch

from toolsense.catalog import Catalog, Tool
from toolsense.index import ToolIndex, Trie, add_index_tokens, build_index, build_trie, tool_token_ids


def small_catalog(n_services=4, per=5):
    tools = [
        Tool.from_name(f"Svc{s}&&api_{a}", api_description=f"service {s} operation {a}")
        for s in range(n_services) for a in range(per)
    ]
    return Catalog.from_tools((t, f"mem:{i}") for i, t in enumerate(tools))


@pytest.mark.parametrize("builder", ["flat", "structural", "clustered"])
def test_index_round_trip(tmp_path, builder):
    cat = small_catalog()
    emb = np.random.default_rng(0).normal(size=(len(cat), 8))
    params = {"branching": 3, "seed": 0, "embeddings": emb} if builder == "clustered" else {}
    idx = build_index(cat, builder, **params)
    path = idx.save(tmp_path / "index.json")
    back = ToolIndex.load(path, cat)
    assert back.paths == idx.paths and back.init_text == idx.init_text
    assert (back.scheme, back.builder, back.catalog_hash) == (idx.scheme, idx.builder, cat.content_hash())
    assert all(back.tool_of(p) == n for n, p in idx.paths.items())
    other = small_catalog(n_services=3)
    with pytest.raises(ValueError, match="different catalog"):
        ToolIndex.load(path, other)


def test_flat_and_structural_tokens():
    cat = small_catalog(2, 2)
    flat = build_index(cat, "flat")
    assert flat.paths["Svc0&&api_1"] == ("<<Svc0&&api_1>>",) and flat.scheme == "flat"
    st = build_index(cat, "structural")
    assert st.paths["Svc1&&api_0"] == ("<<S:Svc1>>", "<<A:Svc1&&api_0>>")
    assert st.internal_nodes()[("<<S:Svc1>>",)] == ["Svc1&&api_0", "Svc1&&api_1"]
    assert len(st.tokens()) == 2 + 4


def test_clustered_is_deterministic_and_respects_branching(demo_catalog, tmp_path, monkeypatch):
    from toolsense.models.encoders import encoder_embeddings

    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path))
    emb = encoder_embeddings(demo_catalog)  # the caller supplies MiniLM embeddings; the index never encodes
    a = build_index(demo_catalog, "clustered", embeddings=emb, branching=4, seed=3)
    b = build_index(demo_catalog, "clustered", embeddings=lambda: encoder_embeddings(demo_catalog), branching=4, seed=3)
    assert a.paths == b.paths
    assert len(set(a.paths.values())) == len(demo_catalog)  # every tool its own path
    # every internal node has at most `branching` children
    children = {}
    for p in a.paths.values():
        for d in range(len(p)):
            children.setdefault(p[:d], set()).add(p[d])
    assert max(len(c) for c in children.values()) <= 4
    assert a.depth() >= 3  # ~130 tools, branching 4 -> at least 3 levels
    assert set(a.tokens()) <= {f"<<C:{k}>>" for k in range(4)}
    # tools of the same service tend to share a top-level cluster (embeddings carry meaning)
    same = [len({a.paths[n][0] for n in names}) for names in demo_catalog.services().values()]
    assert np.mean(same) < 2.5


def test_clustered_needs_embeddings_from_its_caller():
    cat = small_catalog()
    with pytest.raises(ValueError, match="needs the tools' embeddings from its caller"):
        build_index(cat, "clustered", branching=3, seed=0)
    with pytest.raises(ValueError, match=r"shape \(19, 8\) for 20 tools"):
        build_index(cat, "clustered", embeddings=np.zeros((19, 8)), branching=3, seed=0)


def test_index_package_does_not_import_the_models():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from toolsense.catalog import Catalog, Tool; "
            "from toolsense.index.config import IndexConfig, index_from_config; "
            "cat = Catalog.from_tools((Tool.from_name(f'S&&a{i}'), f'm:{i}') for i in range(12)); "
            "idx = index_from_config(IndexConfig(builder='clustered', branching=3), cat, lambda: np.eye(12, dtype=np.float32)); "
            "print(len(set(idx.paths.values())), sorted(m for m in sys.modules if m.startswith('toolsense.models')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["12", "[]"]


def test_trie_allows_exactly_valid_continuations():
    seqs = {"a": [10, 11], "b": [10, 12], "c": [13]}
    trie = Trie.build(seqs, eos_id=2)
    assert sorted(trie.allowed([])) == [10, 13]
    assert sorted(trie.allowed([10])) == [11, 12]
    assert trie.allowed([10, 11]) == [2]
    assert trie.allowed([13]) == [2]
    assert trie.allowed([11]) == [] and trie.allowed([10, 11, 2]) == []
    assert trie.lookup([10, 12, 2]) == "b" and trie.lookup([13, 2]) == "c"
    assert trie.lookup([10, 12]) is None and trie.lookup([10, 2]) is None and trie.lookup([13, 2, 2]) is None
    with pytest.raises(ValueError, match="same token ids"):
        Trie.build({"x": [1], "y": [1]}, eos_id=2)


def test_trie_over_tokenizer_matches_index(tiny_model, demo_catalog):
    model, tok = tiny_model
    idx = build_index(demo_catalog, "structural")
    add_index_tokens(idx, model, tok)
    trie = build_trie(idx, tok)
    ids = tool_token_ids(idx, tok)
    services = demo_catalog.services()
    root = sorted(trie.allowed([]))
    assert root == sorted(tok.convert_tokens_to_ids([f"<<S:{s}>>" for s in services]))
    svc = next(iter(services))
    first = tok.convert_tokens_to_ids(f"<<S:{svc}>>")
    assert sorted(trie.allowed([first])) == sorted(ids[n][1] for n in services[svc])
    for name, seq in ids.items():
        assert trie.lookup(seq + [tok.eos_token_id]) == name


def _subtoken_mean(weight, tok_ids):
    return weight[tok_ids].float().mean(0)


def test_new_rows_are_subtoken_means_and_tying_kept(tiny_model, demo_catalog):
    model, tok = tiny_model
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    base = model.get_input_embeddings().weight.detach().clone()
    idx = build_index(demo_catalog, "flat")
    subs = {t: tok(idx.init_text[t], add_special_tokens=False)["input_ids"] for t in idx.tokens()}
    ids = add_index_tokens(idx, model, tok)
    emb = model.get_input_embeddings().weight
    assert len(tok) == base.shape[0] + len(demo_catalog)
    assert emb.shape[0] == -(-len(tok) // 64) * 64 > len(tok)  # padded to a multiple of 64 (1150 -> 1152)
    assert not emb[len(tok):].any()  # the padding rows are zero
    assert model.get_output_embeddings().weight is emb  # still tied
    assert torch.equal(emb[: base.shape[0]], base)  # old rows untouched
    for t, i in zip(idx.tokens(), ids):
        assert torch.allclose(emb[i], _subtoken_mean(base, subs[t]), atol=1e-6)
    # each tool token encodes to exactly one id
    t0 = idx.tokens()[0]
    assert tok(f"use {t0}", add_special_tokens=False)["input_ids"][-1] == ids[0]
    # idempotent: adding again changes nothing
    assert add_index_tokens(idx, model, tok) == ids and model.get_input_embeddings().weight is emb


def test_untied_model_initialises_output_rows_too(tiny_model_dir, demo_catalog):
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    cfg = AutoModelForCausalLM.from_pretrained(tiny_model_dir).config
    cfg.tie_word_embeddings = False
    torch.manual_seed(1)
    model = LlamaForCausalLM(cfg)
    inp, out = model.get_input_embeddings().weight.detach().clone(), model.get_output_embeddings().weight.detach().clone()
    assert not torch.equal(inp, out)
    idx = build_index(demo_catalog, "structural")
    subs = {t: tok(idx.init_text[t], add_special_tokens=False)["input_ids"] for t in idx.tokens()}
    ids = add_index_tokens(idx, model, tok)
    assert model.get_output_embeddings().weight is not model.get_input_embeddings().weight
    for t, i in list(zip(idx.tokens(), ids))[:20]:
        assert torch.allclose(model.get_input_embeddings().weight[i], _subtoken_mean(inp, subs[t]), atol=1e-6)
        assert torch.allclose(model.get_output_embeddings().weight[i], _subtoken_mean(out, subs[t]), atol=1e-6)


def test_index_file_is_plain_json(tmp_path):
    cat = small_catalog(1, 2)
    d = json.loads(build_index(cat, "flat").save(tmp_path / "i.json").read_text())
    assert d["tools"] == [{"name": "Svc0&&api_0", "tokens": ["<<Svc0&&api_0>>"]}, {"name": "Svc0&&api_1", "tokens": ["<<Svc0&&api_1>>"]}]
    assert d["catalog_hash"] == cat.content_hash()


@pytest.mark.parametrize("builder", ["numeric", "semantic"])
def test_numeric_and_semantic_ids_round_trip_are_unique_and_serve_the_trie(tmp_path, builder, demo_catalog, tiny_model):
    idx = build_index(demo_catalog, builder)
    back = ToolIndex.load(idx.save(tmp_path / "index.json"), demo_catalog)
    assert back.paths == idx.paths and back.builder == builder and back.scheme == "hierarchical"
    assert len(set(idx.paths.values())) == len(demo_catalog)  # every tool its own id
    shared = {t: sum(t in p for p in idx.paths.values()) for t in idx.tokens()}
    assert max(shared.values()) > 1  # tokens are shared between tools (per level, not per tool)
    model, tok = tiny_model
    add_index_tokens(idx, model, tok)
    trie, ids = build_trie(idx, tok), tool_token_ids(idx, tok)
    for name, seq in ids.items():  # every id decodes back; every continuation is a tool's next token
        assert trie.lookup(seq + [tok.eos_token_id]) == name
        for d in range(len(seq)):
            below = {s[d] if len(s) > d else tok.eos_token_id for s in ids.values() if s[:d] == seq[:d]}
            assert set(trie.allowed(seq[:d])) == below


def test_numeric_and_semantic_values():
    cat = small_catalog(3, 4)  # 12 tools: Svc0&&api_0 ... Svc2&&api_3
    num = build_index(cat, "numeric")
    assert num.paths["Svc0&&api_0"] == ("<<N:0>>", "<<N:0>>") and num.paths["Svc2&&api_3"] == ("<<N:1>>", "<<N:1>>")
    assert num.params == {"width": 2} and sorted(num.tokens()) == [f"<<N:{d}>>" for d in range(10)]
    sem = build_index(cat, "semantic")
    assert sem.paths["Svc1&&api_2"] == ("<<W:svc>>", "<<W:1>>", "<<W:api>>", "<<W:2>>")
    assert sem.init_text["<<W:svc>>"] == "svc"
    from toolsense.index.builders import name_words

    assert name_words("GeoDB Cities&&getCity_v2") == ["geo", "db", "cities", "get", "city", "v", "2"]
    twins = Catalog.from_tools((t, f"mem:{i}") for i, t in enumerate([Tool.from_name("Foo Bar&&go"), Tool.from_name("FooBar&&go")]))
    tw = build_index(twins, "semantic")
    assert tw.paths["FooBar&&go"] == tw.paths["Foo Bar&&go"] + ("<<W:#2>>",)
