"""A released ToolGen checkpoint evaluates with one command and no resize: a tiny model built to
look like one (every ``<<Service&&API>>`` token already in its tokenizer with trained rows, an
untied LM head, its own EOS and chat template) keeps its vocabulary, rows, EOS and template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from toolsense.catalog import load_demo_catalog
from toolsense.catalog.config import CatalogConfig
from toolsense.evaluation.context import load_untrained
from toolsense.evaluation.runner import run
from toolsense.index import add_index_tokens, build_index
from toolsense.index.config import IndexConfig
from toolsense.models import ModelConfig, load_model_and_tokenizer
from toolsense.utils.modeling import embeddings_tied

TEMPLATE = ("{% for m in messages %}<|start|>{{ m['role'] }}\n{{ m['content'] }}<|eot|>{% endfor %}"
            "{% if add_generation_prompt %}<|start|>assistant\n{% endif %}")


def make_toolgen_like(root: Path, tools: int | None = None) -> Path:
    """tiny_random + the demo catalog's flat tokens (the first ``tools`` of them, default all),
    rows moved off their mean init, the head untied, EOS ``<|eot|>`` and its own template."""
    cat = load_demo_catalog()
    index = build_index(cat, "flat")
    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    tok.add_special_tokens({"additional_special_tokens": ["<|start|>", "<|eot|>"]})
    tok.eos_token = "<|eot|>"
    tok.chat_template = TEMPLATE
    if tools is not None:
        index.paths = dict(list(index.paths.items())[:tools])
    ids = add_index_tokens(index, model, tok)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        head = torch.nn.Linear(model.config.hidden_size, model.get_input_embeddings().weight.shape[0], bias=False)
        head.weight.copy_(model.get_output_embeddings().weight + 0.3 * torch.randn(head.weight.shape, generator=g))
        model.set_output_embeddings(head)
        model.config.tie_word_embeddings = False
        model.get_input_embeddings().weight[ids] += 0.5 * torch.randn(len(ids), model.config.hidden_size, generator=g)
    assert not embeddings_tied(model)
    model.save_pretrained(root)
    tok.save_pretrained(root)
    return root


@pytest.fixture(scope="module")
def toolgen_dir(tmp_path_factory) -> Path:
    return make_toolgen_like(tmp_path_factory.mktemp("toolgen_like"))


def test_checkpoint_tokens_rows_eos_and_template_are_reused(toolgen_dir):
    ref, ref_tok = load_model_and_tokenizer(ModelConfig(str(toolgen_dir), dtype="float32"))
    ev = load_untrained(ModelConfig(str(toolgen_dir), dtype="float32"), CatalogConfig(), IndexConfig(builder="flat"), device="cpu")
    assert ev.source["stage"] == "checkpoint"
    assert len(ev.tokenizer) == len(ref_tok)  # no token added
    for get in ("get_input_embeddings", "get_output_embeddings"):  # no resize, rows bit-identical (not mean-initialised)
        assert torch.equal(getattr(ev.model, get)().weight, getattr(ref, get)().weight)
    assert not embeddings_tied(ev.model)
    assert ev.tokenizer.eos_token == "<|eot|>" and ev.trie().eos_id == ref_tok.convert_tokens_to_ids("<|eot|>")
    assert ev.tokenizer.chat_template == TEMPLATE


def test_one_command_evaluates_it(toolgen_dir, tmp_path):
    summary = run({"model": {"name_or_path": str(toolgen_dir), "dtype": "float32"}, "device": "cpu", "task": "evaluate",
                   "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 6}},
                   "decoding": {"beam_width": 5, "batch_size": 3}, "metrics": {"ks": [1, 5], "resamples": 20},
                   "logger": {"kind": "none"}, "output_dir": str(tmp_path)})
    res = summary["results"][0]
    assert res["system"] == f"{toolgen_dir}:checkpoint" and res["n"] == 6
    rows = [json.loads(x) for x in (tmp_path / "realistic" / "model" / "samples.jsonl").read_text().splitlines()]
    names = set(load_demo_catalog().names)
    assert all(len(r["constrained"]) == 5 and {b["tool"] for b in r["constrained"]} <= names for r in rows)
    assert rows[0]["prompt"].startswith("<|start|>") and rows[0]["prompt"].endswith("<|start|>assistant\n")


def test_a_checkpoint_holding_some_of_the_tokens_is_refused(tmp_path):
    path = make_toolgen_like(tmp_path / "partial", tools=10)
    with pytest.raises(ValueError, match=r"holds 10 of the 126 index tokens.*catalog="):
        load_untrained(ModelConfig(str(path), dtype="float32"), CatalogConfig(), IndexConfig(builder="flat"), device="cpu")
