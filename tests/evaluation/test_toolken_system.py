"""The toolken head as a system (evaluation/toolken.py) on tiny_random over the demo catalog:
the answer state is the one the LM head reads; the constrained ranking is the argsort of the
toolken scores; the free-form ranking is the joint softmax over vocabulary ∪ toolkens (a hit
exactly when a gold toolken is among its top k); the runner writes, fingerprints and resumes its
folder with Rf / IS and "probes: not applicable", without a parametric model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark


def make_toolken_run(root: Path, noise: float = 0.03) -> Path:
    """tiny_random + the demo catalog → <root>/{config.yaml,index.json,toolken/head.pt,head.json};
    the rows are the name-mean start moved by ``noise`` × a seeded direction."""
    from omegaconf import OmegaConf

    from toolsense.catalog import load_demo_catalog
    from toolsense.index import build_index
    from toolsense.models import ModelConfig, load_model_and_tokenizer
    from toolsense.models.toolken import name_mean_rows

    index = build_index(load_demo_catalog(), "flat")
    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    tools = list(index.paths)
    rows = name_mean_rows(model, tok, tools)
    rows += noise * torch.randn(rows.shape, generator=torch.Generator().manual_seed(3))
    (root / "toolken").mkdir(parents=True)
    torch.save({"tools": tools, "rows": rows}, root / "toolken" / "head.pt")
    (root / "toolken" / "head.json").write_text("{}")
    index.save(root / "index.json")
    cfg = {"model": {"name_or_path": "tiny_random", "dtype": "float32", "eos_token": "<|im_end|>"},
           "catalog": {"path": None, "format": "auto", "on_duplicate": "error"}, "index": {"builder": "flat"},
           "prompts": {"system_prompt": "Pick the tool.", "use_system_prompt": True, "retrieval_template": "Query: {query}"},
           "head": {"kind": "toolken"}, "stage2": {"sources": [{"kind": "demo", "split": "train", "style": "short"}]}}
    OmegaConf.save(OmegaConf.create(cfg), root / "config.yaml")
    return root


@pytest.fixture(scope="module")
def toolken_run(tmp_path_factory, tiny_model_dir) -> Path:
    return make_toolken_run(tmp_path_factory.mktemp("toolken"))


@pytest.fixture(scope="module")
def queries():
    return list(load_benchmark(BenchmarkConfig(loader="demo", split="test", style="short", limit=6), "benchmark").items)


def test_answer_state_is_what_the_lm_head_reads(tiny_model):
    from toolsense.models.toolken import answer_states, vocab_rows

    model, tok = tiny_model
    model.eval()
    prompts = ["Query: weather in Paris", "Query: a much longer request about converting currencies today"]
    h = answer_states(model, tok, prompts, batch_size=2)  # right-padded together
    vocab, _ = vocab_rows(model, tok)
    for i, p in enumerate(prompts):
        ids = tok(p, return_tensors="pt", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, -1, : len(tok)]
        assert torch.allclose(h[i] @ vocab.T, logits, atol=1e-4)


def test_constrained_is_the_argsort_of_the_toolken_scores_and_free_the_joint_softmax(toolken_run, queries):
    from toolsense.data.prompts import render_prompt, retrieval_messages
    from toolsense.evaluation.toolken import ToolkenRanker
    from toolsense.models.toolken import answer_states

    ranker = ToolkenRanker(str(toolken_run), top=12, batch_size=4)
    got = list(ranker.run(queries))
    assert [r.query.query_id for r in got] == [q.query_id for q in queries]
    head, n_vocab = ranker.head, ranker.head.n_vocab
    for rec in got:
        h = answer_states(ranker.model, ranker.tok, [render_prompt(ranker.tok, retrieval_messages(rec.query.text, ranker.prompts))])
        scores = head.tool_logits(h)[0].detach()
        order = [head.tools[i] for i in torch.argsort(scores, descending=True)[:12].tolist()]
        assert [x["tool"] for x in rec.constrained] == order
        assert len(rec.constrained) == 12
        joint = torch.log_softmax(head.joint_logits(h)[0], 0).detach()
        top = torch.topk(joint, 12).indices.tolist()
        assert [x["tool"] for x in rec.free] == [head.tools[j - n_vocab] if j >= n_vocab else None for j in top]
        assert [x["score"] for x in rec.free] == pytest.approx(joint[top].tolist(), abs=1e-4)  # batched vs alone
        # a tool's free score is its constrained score minus log P(some toolken | joint)
        p_tools = torch.logsumexp(joint[n_vocab:], 0)
        for x in rec.free:
            if x["tool"] is not None:
                c = next(y["score"] for y in rec.constrained if y["tool"] == x["tool"])
                assert x["score"] == pytest.approx(c + float(p_tools.detach()), abs=1e-4)
    assert any(x["tool"] is None for r in got for x in r.free)  # the vocabulary competes
    assert any(x["tool"] is not None for r in got for x in r.free)


def test_runner_scores_a_toolken_system_without_a_parametric_model(toolken_run, tmp_path):
    from toolsense.evaluation.runner import run

    cfg = {"parametric": False, "task": "evaluate", "device": "cpu",
           "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 6}},
           "systems": {"toolken": {"kind": "toolken", "run": str(toolken_run)}},
           "decoding": {"beam_width": 6}, "metrics": {"ks": [1, 6], "resamples": 20},  # batch_size: the default, auto
           "probe": {"modes": []}, "logger": {"kind": "none"}, "output_dir": str(tmp_path)}
    first = run(cfg)
    row = {r["system"]: r for r in first["results"]}["toolken"]
    assert {"Rc@1", "Rf@1", "IS@1", "COMPf@6", "Rprec_f"} <= set(row["metrics"])
    d = tmp_path / "realistic" / "toolken"
    samples = [json.loads(ln) for ln in (d / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 6 and all(len(s["constrained"]) == 6 and len(s["free"]) == 6 for s in samples)
    rc1 = sum(s["metrics"]["c_hit@1"] for s in samples) / 6
    assert row["metrics"]["Rc@1"]["value"] == pytest.approx(rc1)
    for s in samples:  # Rf@1: the argmax over vocabulary ∪ toolkens is a gold toolken
        assert s["metrics"]["f_hit@1"] == float(s["free"][0]["tool"] in s["gold"])
    res = json.loads((d / "results.json").read_text())
    assert res["probes"].startswith("not applicable") and res["source"]["model"]["stage"] == "toolken"
    from toolsense.evaluation.coverage import stage2_tools  # a trained system's coverage: its own run's Stage 2

    trained = stage2_tools(toolken_run, [t["name"] for t in json.loads((toolken_run / "index.json").read_text())["tools"]])
    assert 0 < len(trained.tools) < 126 and res["coverage"]["trained_tools"] == len(trained.tools)
    assert (res["coverage"]["covered"] == sum(bool(s["covered"]) for s in samples)
            == sum(bool(set(s["gold"]) & trained.tools) for s in samples))
    assert not res["source"]["model"]["run"].startswith("/")
    fp = json.loads((d / "samples.fingerprint.json").read_text())
    assert "checkpoint_sha256" in json.dumps(fp) and '"free_form": true' in json.dumps(fp)
    before = (d / "samples.jsonl").read_text()
    again = run(cfg)
    assert (d / "samples.jsonl").read_text() == before
    assert {r["system"]: r for r in again["results"]}["toolken"]["metrics"] == row["metrics"]
    from toolsense.comparison.compare import collect, comparison

    comp = comparison(collect([tmp_path]), ["Rc@1", "Rf@1", "IS@1"])
    rows = [r for r in comp["rows"] if r.startswith("toolken")]
    assert len(rows) == 1 and comp["cells"][rows[0]]["realistic Rf@1"]["value"] == pytest.approx(row["metrics"]["Rf@1"]["value"])
    with pytest.raises(Exception, match="checkpoint_sha256"):  # another head is another system
        other = make_toolken_run(tmp_path / "other", noise=0.02)
        run({**cfg, "systems": {"toolken": {"kind": "toolken", "run": str(other)}}})


def test_toolken_system_config_refusals(tmp_path):
    from toolsense.evaluation.systems import SystemConfig
    from toolsense.evaluation.toolken import toolken_run

    with pytest.raises(ValueError, match="system.run"):
        SystemConfig(kind="toolken")
    with pytest.raises(FileNotFoundError, match="experiment=toolken"):
        toolken_run(str(tmp_path))


@pytest.mark.slow
def test_smollm2_toolken_learns_its_training_queries(tmp_path, smollm2_dir):
    """The embedded SmolLM2 trained as a toolken head (train.py's runner, 9 weather tools, 16
    queries): constrained Rc@1 on its training queries rises from the name-mean start to >= 0.75,
    and the base model's LM head is untouched (its rows are the vocabulary half of the softmax)."""
    from tests.training.conftest import TINY, compose_train
    from toolsense.catalog import load_query_jsonl
    from toolsense.evaluation.toolken import ToolkenRanker
    from toolsense.training import to_train_config
    from toolsense.training.runner import run as train

    over = [o for o in TINY if not o.startswith("model=")] + ["model=smollm2_135m", "experiment=toolken", "stage2.epochs=40",
                                                                "stage2.max_steps=-1", "stage2.learning_rate=3e-2"]
    cfg = to_train_config(compose_train(over))
    queries = load_query_jsonl(cfg.stage2.sources[0].path)

    def rc1(run_dir):
        got = list(ToolkenRanker(str(run_dir), top=1, batch_size=8).run(queries))
        return sum(r.constrained[0]["tool"] in r.query.tools for r in got) / len(got)

    summary = train(cfg, output_dir=tmp_path / "run")["stage2"]
    after = rc1(tmp_path / "run")
    state = torch.load(tmp_path / "run" / "toolken" / "head.pt")
    torch.save({**state, "rows": _start_rows(tmp_path / "run", state["tools"])}, tmp_path / "run" / "toolken" / "head.pt")
    before = rc1(tmp_path / "run")
    assert summary["last_loss"] < summary["first_loss"] / 2
    assert after >= 0.75 and after > before, (before, after)


def _start_rows(run_dir, tools):
    from toolsense.catalog.config import CatalogConfig, load_from_config
    from toolsense.index import ToolIndex
    from toolsense.models import ModelConfig, load_model_and_tokenizer
    from toolsense.models.toolken import name_mean_rows
    from toolsense.utils.rundir import RunDir

    rd = RunDir(run_dir)
    index = ToolIndex.load(rd.index_path, load_from_config(rd.section("catalog", CatalogConfig)))
    model, tok = load_model_and_tokenizer(rd.section("model", ModelConfig))
    return name_mean_rows(model, tok, [index.init_text[index.paths[t][0]] for t in tools])
