"""Training prompts cut by trainer.max_length are counted and said (issue 38: they were cut
silently), the counts pinned against each example's own token length."""

from __future__ import annotations

import logging
from pathlib import Path

from toolsense.catalog import load_catalog
from toolsense.data.examples import to_dataset, tokenize_example
from toolsense.data.memorization import MemorizationConfig, build_memorization_examples
from toolsense.index import add_index_tokens, build_index


def test_examples_longer_than_max_length_are_counted_and_logged(tiny_model, caplog):
    model, tok = tiny_model
    cat = load_catalog(Path(__file__).parents[1] / "assets" / "training" / "tools.jsonl")
    index = build_index(cat, "flat")
    add_index_tokens(index, model, tok)
    examples = build_memorization_examples(cat, index, MemorizationConfig())
    lengths = [len(tokenize_example(ex, tok, 10_000)["input_ids"]) for ex in examples]  # nothing cut at 10k
    limit = sorted(lengths)[len(lengths) // 2]  # about half are longer
    cut = {}
    with caplog.at_level(logging.WARNING):
        data = to_dataset(examples, tok, limit, cut)
    over = sum(n > limit for n in lengths)
    assert cut == {"examples": len(examples), "cut": over, "longest": max(lengths), "max_length": limit}
    assert 0 < over < len(examples)
    assert max(len(ids) for ids in data["input_ids"]) == limit
    assert f"{over} of {len(examples)} training examples are longer than trainer.max_length={limit}" in caplog.text
    assert to_dataset(examples, tok, 10_000, cut) is not None and cut["cut"] == 0
