"""Systems (systems.py): reciprocal-rank fusion by hand, and both hybrids on a real tiny model
(tiny_random run of the demo catalog): the restricted search never leaves its candidates and
scores them exactly as the full constrained search does; fusing the model with itself is the
model; the runner writes, fingerprints and resumes a system's folder and tables its row."""

from __future__ import annotations

import json

import pytest

from toolsense.baselines.config import BaselineConfig
from toolsense.baselines.rankers import build_baseline
from toolsense.decoding.config import DecodingConfig
from toolsense.decoding.retrieval import Retriever
from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
from toolsense.evaluation.config import EvaluateConfig
from toolsense.evaluation.context import load_run
from toolsense.evaluation.systems import FusionRanker, RestrictedRanker, SystemConfig, reciprocal_rank_fusion
from toolsense.utils.errors import ConfigError


def test_rrf_hand_values():
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", None, "a", "a"]], k=1))
    assert fused == pytest.approx({"a": 1 / 2 + 1 / 4, "b": 1 / 3, "c": 1 / 4 + 1 / 2})  # None holds rank 2; a repeat adds nothing
    order = [t for t, _ in reciprocal_rank_fusion([["a", "b", "c"], ["c", None, "a", "a"]], k=1)]
    assert order == ["a", "c", "b"]  # a and c tie at 0.75 with best rank 1 each: by name
    assert [t for t, _ in reciprocal_rank_fusion([["x", "y"], ["y", "z"]], k=60)] == ["y", "x", "z"]
    with pytest.raises(ValueError, match="k >= 0"):
        reciprocal_rank_fusion([["a"]], k=-1)


def test_rrf_of_identical_rankings_is_the_identity():
    r = ["t3", "t1", "t7", "t0", "t9"]
    for n in (1, 2, 5):
        assert [t for t, _ in reciprocal_rank_fusion([r] * n)] == r
    assert reciprocal_rank_fusion([r, r])[0][1] == pytest.approx(2 / 61)


@pytest.fixture(scope="module")
def ev(tiny_run):
    return load_run(tiny_run, "stage2", "cpu")


@pytest.fixture(scope="module")
def queries():
    return list(load_benchmark(BenchmarkConfig(loader="demo", split="test", style="short", limit=6), "benchmark").items)


def test_restricted_hybrid_stays_inside_its_candidates_and_keeps_the_model_scores(ev, queries):
    dec = DecodingConfig(beam_width=10, batch_size=4, free_form=False)
    first = build_baseline(ev.catalog, BaselineConfig(kind="bm25"), 5)
    cands = {r.query.query_id: [x["tool"] for x in r.constrained] for r in first.run(queries)}
    n_tools = len(ev.index.paths)
    full = {r.query.query_id: {x["tool"]: x["score"] for x in r.constrained}
            for r in Retriever(ev.model, ev.tokenizer, ev.trie(), 1,  ev.prompts,
                               DecodingConfig(beam_width=n_tools, batch_size=4, free_form=False)).run(queries)}
    got = list(RestrictedRanker(ev, first, 5, dec).run(queries))
    assert len(got) == len(queries)
    for rec in got:
        tools = [x["tool"] for x in rec.constrained]
        assert sorted(tools) == sorted(cands[rec.query.query_id])  # all 5 candidates, nothing else
        assert rec.free is None
        for x in rec.constrained:  # a flat tool's score does not depend on which others are in the trie
            assert x["score"] == pytest.approx(full[rec.query.query_id][x["tool"]], abs=2e-5)
        assert [x["score"] for x in rec.constrained] == sorted((x["score"] for x in rec.constrained), reverse=True)
    assert any([x["tool"] for x in r.constrained] != cands[r.query.query_id] for r in got)  # the model re-ranks


def test_fusing_the_model_with_itself_returns_the_model_ranking(ev, queries):
    dec = DecodingConfig(beam_width=8, batch_size=4, free_form=False)
    model = Retriever(ev.model, ev.tokenizer, ev.trie(), 1, ev.prompts, dec)
    own = {r.query.query_id: [x["tool"] for x in r.constrained] for r in model.run(queries)}
    fused = list(FusionRanker(ev, model, 60.0, 8, dec).run(queries))
    assert [r.query.query_id for r in fused] == [q.query_id for q in queries]  # input order
    for r in fused:
        assert [x["tool"] for x in r.constrained] == own[r.query.query_id]
        assert all(x["model_rank"] == x["other_rank"] == i + 1 for i, x in enumerate(r.constrained))


def test_system_config_errors_name_the_field():
    with pytest.raises(ValueError, match=r"system.kind='nope'.*restricted"):
        SystemConfig(kind="nope")
    with pytest.raises(ValueError, match="system.n_candidates"):
        SystemConfig(n_candidates=0)
    with pytest.raises(ConfigError, match="parametric=true"):
        EvaluateConfig(parametric=False, system=SystemConfig())
    with pytest.raises(ValueError, match="taken by a baseline"):
        EvaluateConfig(baselines={"bm25": BaselineConfig()}, systems={"bm25": SystemConfig()})


def test_a_system_that_re_ranks_refuses_a_missing_model_as_a_user_error(ev):
    """Past the config check (a library call builds the ranker itself), a re-ranking system without the parametric
    model is a ConfigError naming parametric=true, not a bare ValueError (a traceback from a job)."""
    from toolsense.evaluation.systems import SYSTEMS

    for kind in ("restricted", "rrf"):
        with pytest.raises(ConfigError, match=f"system kind={kind} re-ranks with the parametric model: it needs parametric=true"):
            SYSTEMS.get(kind)(None, ev.catalog, SystemConfig(kind=kind), DecodingConfig())


def test_runner_evaluates_fingerprints_and_resumes_a_system(tiny_run, tmp_path):
    from toolsense.evaluation.runner import run

    cfg = {"run": str(tiny_run), "stage": "stage2", "device": "cpu", "task": "evaluate",
           "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 6}},
           "systems": {"hyb": {"kind": "restricted", "n_candidates": 4, "candidates": {"kind": "bm25"}},
                       "fused": {"kind": "rrf", "candidates": {"kind": "bm25"}}},
           "decoding": {"beam_width": 6, "batch_size": 4}, "metrics": {"ks": [1, 6], "resamples": 20},
           "probe": {"modes": []}, "logger": {"kind": "none"}, "output_dir": str(tmp_path)}
    first = run(cfg)
    rows = {r["system"]: r for r in first["results"]}
    assert set(rows) >= {"hyb", "fused"}
    hyb = tmp_path / "realistic" / "hyb"
    fp = json.loads((hyb / "samples.fingerprint.json").read_text())
    assert "n_candidates" in json.dumps(fp) and "checkpoint_sha256" in json.dumps(fp)
    samples = [json.loads(ln) for ln in (hyb / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 6 and all(len(s["constrained"]) <= 4 for s in samples)
    assert "COMPc@6" in rows["hyb"]["metrics"] and "Rf@6" not in rows["hyb"]["metrics"]  # constrained only
    src = json.loads((hyb / "results.json").read_text())["source"]
    assert src["system"]["n_candidates"] == 4 and not src["model"]["run"].startswith("/")  # relative to the folder
    before = (hyb / "samples.jsonl").read_text()
    again = run(cfg)  # resumes: nothing is ranked again, the same numbers come back
    assert (hyb / "samples.jsonl").read_text() == before
    assert {r["system"]: r["metrics"] for r in again["results"]}["hyb"] == rows["hyb"]["metrics"]
    assert "| realistic | hyb |" in (tmp_path / "table.md").read_text()
    from toolsense.comparison.compare import collect, comparison

    comp = comparison(collect([tmp_path]), ["Rc@6", "COMPc@6", "Rprec_c"])
    hyb_rows = [r for r in comp["rows"] if r.startswith("hyb (")]
    assert len(hyb_rows) == 1 and any(r.startswith("fused (") for r in comp["rows"])
    cell = comp["cells"][hyb_rows[0]]["realistic COMPc@6"]
    assert cell["value"] == pytest.approx(rows["hyb"]["metrics"]["COMPc@6"]["value"])
    with pytest.raises(Exception, match="n_candidates"):  # another candidate count is another system
        run({**cfg, "systems": {"hyb": {"kind": "restricted", "n_candidates": 3, "candidates": {"kind": "bm25"}}}})


@pytest.mark.parametrize("suite,bench", [("hybrids", "realistic"), ("hybrids_rrb", "rrb")])
def test_hybrid_suites_compose(suite, bench):
    from toolsense.utils.compose import compose
    from toolsense.utils.config import to_config

    cfg = to_config(EvaluateConfig, compose("evaluate", overrides=[f"suite={suite}"]))
    systems = cfg.system_sections()
    assert sorted(systems) == ["restricted_bm25", "restricted_dense", "rrf_bm25", "rrf_dense"]
    assert systems["restricted_dense"].candidates.kind == "dense" and systems["restricted_bm25"].n_candidates == 20
    assert systems["rrf_bm25"].rrf_k == 60 and sorted(cfg.baseline_sections()) == ["bm25", "dense"]
    assert list(cfg.benchmark_sections()) == [bench]
    if suite == "hybrids_rrb":
        assert cfg.benchmark_sections()["rrb"].path.endswith("released/rrb_dev.jsonl")
    one = to_config(EvaluateConfig, compose("evaluate", overrides=["system=rrf_dense"]))
    assert list(one.system_sections()) == ["rrf_dense"]
