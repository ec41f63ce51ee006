"""A query longer than the model can read is refused, or truncated and counted, before any search
(issue 38: a 60,000-token query grew the process to 20 GB and was killed without a message;
queries past the context were scored silently)."""

from __future__ import annotations

import json
import logging

import pytest

from tests.evaluation.test_runner import _cfg
from toolsense.catalog.loaders import DEMO_DIR
from toolsense.evaluation.runner import run


def _long_queries(tmp_path, words: int):
    path = tmp_path / "q.jsonl"
    rows = [{"query_id": "short", "query": "send an email", "tools": ["Email&&send_email"]},
            {"query_id": "huge", "query": " ".join(["weather"] * words), "tools": ["Email&&send_email"]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _one(run_dir, out, path, **kw):
    return _cfg(run_dir, out, benchmarks={"long": {"loader": "query_jsonl", "path": str(path), "split": None}},
                baselines={}, **kw)


def test_a_query_past_the_models_context_is_refused_before_any_search(tiny_run, tmp_path):
    path = _long_queries(tmp_path, 5_000)  # past the context, yet small enough to score should the guard fail
    out = tmp_path / "out"
    with pytest.raises(ValueError) as e:
        run(_one(tiny_run, out, path))
    msg = str(e.value)  # tiny_random reads 2,048 positions; the flat index generates 2 tokens
    assert f"benchmarks.long ({path}): 1 of 2 queries are longer than the model can read (2046 prompt tokens: " in msg
    assert "the model's context of 2048 less 2 generated); the longest: 'huge' (" in msg
    assert "Set query_length.policy=truncate" in msg
    assert not (out / "long").exists()  # nothing claimed, nothing scored


def test_truncate_cuts_over_long_queries_to_fit_and_counts_them(tiny_run, tmp_path, caplog):
    from transformers import AutoTokenizer

    path = _long_queries(tmp_path, 300)
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING, logger="toolsense.decoding.length"):
        summary = run(_one(tiny_run, out, path, query_length={"max_tokens": 64, "policy": "truncate"}))
    res = summary["results"][0]
    assert res["n"] == 2 and res["query_length"] == {
        "policy": "truncate", "limit_tokens": 64, "limit": "query_length.max_tokens=64", "queries": 2, "over": 1,
        "truncated": 1, "longest": res["query_length"]["longest"], "items": ["huge"]}
    assert res["query_length"]["longest"] > 300
    longest = res["query_length"]["longest"]  # the cut is said where the run is watched, not only in results.json
    assert f"benchmarks.long ({path}): 1 of 2 queries cut to fit 64 prompt tokens (query_length.max_tokens=64; " \
           f"query_length.policy=truncate); the longest was {longest} tokens" in caplog.text
    tok = AutoTokenizer.from_pretrained(tiny_run / "stage2")
    samples = {json.loads(x)["item_id"]: json.loads(x) for x in (out / "long" / "model" / "samples.jsonl").read_text().splitlines()}
    lengths = {k: len(tok(s["prompt"], add_special_tokens=False)["input_ids"]) for k, s in samples.items()}
    assert lengths["huge"] <= 64 < lengths["huge"] + 3 and lengths["short"] < 64  # cut to fit, nothing more
    assert samples["short"]["query"] == "send an email" and samples["huge"]["query"].startswith("weather weather")
    fp = json.loads((out / "long" / "model" / "samples.fingerprint.json").read_text())["fingerprint"]
    assert fp["query_length"] == {"policy": "truncate", "limit_tokens": 64}  # another cut is another evaluation


def test_a_probe_past_the_models_context_is_refused_before_anything_is_scored(tiny_run, tmp_path):
    """Probe prompts are measured too: a long question would be scored past the context (or run the
    process out of memory), in every mode."""
    good = json.loads((DEMO_DIR / "probes_qa.jsonl").read_text().splitlines()[0])
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "huge", "question": " ".join(["weather"] * 3_000)}) + "\n")
    out = tmp_path / "out"
    with pytest.raises(ValueError) as e:
        run(_cfg(tiny_run, out, benchmarks={"qa": {"loader": "qa", "path": str(path)}}, baselines={}))
    msg = str(e.value)  # tiny_random reads 2,048 positions; its longest answer ("Yes" / "No") is 2 tokens
    assert msg.startswith(f"benchmarks.qa ({path}): 1 of 2 probe items are longer than the model can read (2046 prompt tokens: "
                          "the model's context of 2048 less 2 of the answer); the longest: 'huge' (")
    assert not (out / "qa").exists()  # nothing claimed, nothing scored
    path.write_text(json.dumps(good) + "\n")
    assert run(_cfg(tiny_run, out, benchmarks={"qa": {"loader": "qa", "path": str(path)}}, baselines={}))["results"][0]["n"] == 1


def test_when_only_the_tool_card_is_too_long_the_refusal_says_to_shorten_its_description(tiny_run, tmp_path, monkeypatch):
    """Issue 49: a very long tool description (cut in training with a warning) made the card probe's
    refusal tell the user to shorten the questions, which fit."""
    import toolsense.evaluation.probes as probes

    names = probes._names
    monkeypatch.setattr(probes, "_names", lambda ev, item: (*names(ev, item)[:3], " ".join(["forecast"] * 3_000)))
    good = json.loads((DEMO_DIR / "probes_qa.jsonl").read_text().splitlines()[0])
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps(good) + "\n")
    with pytest.raises(ValueError) as e:
        run(_cfg(tiny_run, tmp_path / "out", benchmarks={"qa": {"loader": "qa", "path": str(path)}}, baselines={},
                 probe={"modes": ["token", "card"]}))
    assert str(e.value).endswith(f"Only mode card is too long: its prompt holds the tool's descriptions (1 tools, e.g. "
                                 f"{good['tool']['tool_name']!r}). Shorten those descriptions in the catalog, or leave card "
                                 "out of probe.modes")
