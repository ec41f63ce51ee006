"""TREC and BEIR exports read back by trec_eval's own code (pytrec_eval): the measures it computes
from our run files and qrels equal our Rc@k / Rf@k, recall@k and NDCG@k, query by query."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from toolsense.evaluation.runner import run
from toolsense.evaluation.systems import SystemConfig, reciprocal_rank_fusion
from toolsense.metrics.aggregate import item_metrics
from toolsense.reporting.export import (
    INVALID,
    MODES,
    NO_DOC,
    QRELS,
    REPEAT,
    TIE_STEP,
    doc_id,
    export_tree,
    from_doc_id,
    read_qrels,
    read_run,
    run_lines,
    strictly_decreasing,
    without_padding,
    write_beir,
    write_trec,
)
from toolsense.utils.io import DataError

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier is not installed (the dev extra)")

KS = (1, 5, 10)


def trec_measures(qrels, run_, ks=KS) -> dict[str, dict[str, float]]:
    cut = ",".join(map(str, ks))
    ev = pytrec_eval.RelevanceEvaluator(qrels, {f"success.{cut}", f"recall.{cut}", f"ndcg_cut.{cut}"})
    return ev.evaluate(run_)


@pytest.fixture(scope="module")
def tiny_eval(tiny_run, tmp_path_factory) -> Path:
    """A real evaluation: tiny_random's run on 12 realistic demo queries (beam 10), BM25, and the
    RRF hybrid of the two (k = 60, each cut at the beam width)."""
    out = tmp_path_factory.mktemp("export_eval")
    run({"run": str(tiny_run), "stage": "stage2", "device": "cpu", "task": "evaluate", "parametric": True,
         "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 12}},
         "baselines": {"bm25": {"kind": "bm25"}}, "systems": {"rrf_bm25": {"kind": "rrf", "candidates": {"kind": "bm25"}}},
         "decoding": {"beam_width": 10, "batch_size": 4}, "metrics": {"ks": list(KS), "resamples": 50},
         "logger": {"kind": "none"}, "output_dir": str(out)})
    return out


def test_doc_ids_have_no_whitespace_and_round_trip():
    name = "SkyCast Weather&&current weather\t100%"
    assert doc_id(name) == "SkyCast%20Weather&&current%20weather%09100%25"
    assert from_doc_id(doc_id(name)) == name and len(doc_id(name).split()) == 1


def test_invalid_and_repeated_outputs_keep_their_rank_slot():
    lines = run_lines("q 1", ["a", None, "a", "b"], "sys")
    assert lines == ["q%201 Q0 a 1 4 sys", f"q%201 Q0 {INVALID}2 2 3 sys", f"q%201 Q0 {REPEAT}3 3 2 sys", "q%201 Q0 b 4 1 sys"]
    # trec_eval on that ranking: "b" is found at rank 4, not 2, exactly as our NDCG counts it
    got = trec_measures({"q": {"b": 1, "c": 1}}, {"q": {ln.split()[2]: float(ln.split()[4]) for ln in lines}}, (4,))["q"]
    ours = item_metrics(["a", None, "a", "b"], ["b", "c"], [4], "")
    assert got["ndcg_cut_4"] == pytest.approx(ours["ndcg@4"]) == pytest.approx((1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert got["recall_4"] == ours["recall@4"] == 0.5 and got["success_4"] == ours["hit@4"] == 1.0


def _assert_trec_equals_ours(eval_dir: Path, modes) -> dict[str, dict[str, dict[str, float]]]:
    res = json.loads((eval_dir / "results.json").read_text())
    samples = {doc_id(r["item_id"]): r for r in map(json.loads, (eval_dir / "samples.jsonl").read_text().splitlines())}
    qrels = read_qrels(eval_dir / QRELS)
    assert len(qrels) == res["n"] == 12
    out = {}
    for mode, prefix, name in modes:
        per_q = out[mode] = trec_measures(qrels, read_run(eval_dir / MODES[mode]))
        assert set(per_q) == set(samples)
        for qid, m in per_q.items():  # query by query, exactly
            for k in KS:
                assert m[f"success_{k}"] == samples[qid]["metrics"][f"{prefix}hit@{k}"]
                assert m[f"recall_{k}"] == pytest.approx(samples[qid]["metrics"][f"{prefix}recall@{k}"], abs=1e-12)
                assert m[f"ndcg_cut_{k}"] == pytest.approx(samples[qid]["metrics"][f"{prefix}ndcg@{k}"], abs=1e-12)
        for k in KS:  # and the aggregates in results.json
            mean = lambda key: sum(m[key] for m in per_q.values()) / len(per_q)  # noqa: E731
            assert mean(f"success_{k}") == pytest.approx(res["metrics"][f"{name}@{k}"]["value"], abs=1e-12)
            assert mean(f"recall_{k}") == pytest.approx(res["metrics"][f"recall_{mode[0]}@{k}"]["value"], abs=1e-12)
            assert mean(f"ndcg_cut_{k}") == pytest.approx(res["metrics"][f"ndcg_{mode[0]}@{k}"]["value"], abs=1e-12)
    return out


def test_tied_scores_are_separated_in_the_rankings_order():
    assert strictly_decreasing([3.5, 2.0, 2.0, 2.0, 1.0, -0.5]) == [3.5, 2.0, 2.0 - TIE_STEP, 2.0 - 2 * TIE_STEP, 1.0, -0.5]
    # a tie run long enough to reach the next score pushes it down too: the order never flips
    assert strictly_decreasing([1e-6, 1e-6, 0.0]) == [1e-6, 0.0, -1e-6]
    assert run_lines("q", ["a", "b", "c"], "t", [-0.25, -0.25, -1.5]) == ["q Q0 a 1 -0.25 t", "q Q0 b 2 -0.250001 t", "q Q0 c 3 -1.5 t"]
    padded = [{"tool": "a", "score": 2.5}, {"tool": "b", "score": 0.0}, {"tool": "c", "score": 0.0}]
    assert without_padding(padded) == padded[:1]
    beams = [{"tool": "a", "score": 0.0, "logprob": 0.0}]  # a beam of probability ~1 is no padding
    assert without_padding(beams) == beams


def _samples(eval_dir: Path) -> dict[str, dict]:
    return {doc_id(r["item_id"]): r for r in map(json.loads, (eval_dir / "samples.jsonl").read_text().splitlines())}


def test_run_files_carry_the_systems_scores_and_every_slot(tiny_eval, tmp_path):
    model_dir, bm25_dir = tiny_eval / "realistic" / "model", tiny_eval / "realistic" / "bm25"
    for eval_dir, mode in ((model_dir, "constrained"), (model_dir, "free"), (bm25_dir, "constrained")):
        samples, run_ = _samples(eval_dir), read_run(eval_dir / MODES[mode])
        assert set(run_) == set(samples)
        for qid, docs in run_.items():
            ranking = samples[qid][mode]
            assert len(docs) == len(ranking)
            for (doc, score), beam, shown in zip(docs.items(), ranking, strictly_decreasing([b["score"] for b in ranking])):
                assert score == pytest.approx(shown, abs=1e-9) and abs(score - beam["score"]) < 50 * TIE_STEP
    beams = [b["score"] for r in _samples(model_dir).values() for b in r["constrained"]]
    assert max(beams) <= 0 and len(set(beams)) > 10  # log-probabilities, not ranks
    bm25_rows = _samples(bm25_dir).values()
    padded = sum(b["score"] == 0 for r in bm25_rows for b in r["constrained"])
    lines = (bm25_dir / MODES["constrained"]).read_text().splitlines()
    assert padded > 0 and len(lines) == 10 * 12  # the demo's short queries leave BM25 padding: kept by default
    # cut on request: only the tools BM25 found evidence for, and still a line for every query
    shutil.copytree(bm25_dir, tmp_path / "bm25")
    write_trec(tmp_path / "bm25", keep_padding=False)
    cut = (tmp_path / "bm25" / MODES["constrained"]).read_text().splitlines()
    assert len(cut) == 10 * 12 - padded + sum(all(b["score"] == 0 for b in r["constrained"]) for r in bm25_rows)
    assert all(float(ln.split()[4]) > 0 or ln.split()[2] == NO_DOC for ln in cut)
    assert set(read_run(tmp_path / "bm25" / MODES["constrained"])) == {doc_id(r["item_id"]) for r in bm25_rows}


def test_an_empty_ranking_keeps_its_query_as_one_placeholder_line():
    assert run_lines("q 1", [], "bm25", []) == [f"q%201 Q0 {NO_DOC} 1 0 bm25"]
    # unjudged: trec_eval counts the query, with nothing found
    got = trec_measures({"q": {"a": 1}, "r": {"b": 1}}, {"q": {NO_DOC: 0.0}, "r": {"b": 1.0}}, (1,))
    assert got == {"q": {"success_1": 0.0, "recall_1": 0.0, "ndcg_cut_1": 0.0},
                   "r": {"success_1": 1.0, "recall_1": 1.0, "ndcg_cut_1": 1.0}}


def test_trec_export_of_a_real_evaluation_equals_our_metrics(tiny_eval, tmp_path):
    model_dir, bm25_dir = tiny_eval / "realistic" / "model", tiny_eval / "realistic" / "bm25"
    assert {p.name for p in model_dir.glob("*.trec")} == {*MODES.values(), QRELS}
    assert {p.name for p in bm25_dir.glob("*.trec")} == {MODES["constrained"], QRELS}
    _assert_trec_equals_ours(model_dir, [("constrained", "c_", "Rc"), ("free", "f_", "Rf")])
    # the random model's free-form beams hold non-tools: the placeholder path is exercised
    assert INVALID in (model_dir / MODES["free"]).read_text()
    # BM25's zero-score padding counts in our metrics and is kept by default: trec_eval's measures are ours
    bm25 = _assert_trec_equals_ours(bm25_dir, [("constrained", "c_", "Rc")])["constrained"]
    # BM25 finds gold tools, some below rank 1: NDCG strictly between 0 and 1 is compared too
    assert any(0 < m["ndcg_cut_10"] < 1 for m in bm25.values()) and any(m["success_1"] == 1 for m in bm25.values())


def test_ranx_rrf_of_the_exported_runs_is_our_rrf_hybrid(tiny_eval):
    """ranx's reciprocal-rank fusion (our k) of the model's and BM25's runs as the evaluation
    exported them (BM25's padding kept by default: our hybrid fuses those slots too) ranks each
    query's tools as our rrf_bm25 system did, with the same fused scores."""
    ranx = pytest.importorskip("ranx", reason="ranx is not installed (the dev extra)")
    runs = {name: ranx.Run.from_file(str(tiny_eval / "realistic" / name / MODES["constrained"]), kind="trec")
            for name in ("model", "bm25")}
    k = SystemConfig(kind="rrf").rrf_k
    fused = ranx.fuse(runs=[runs["model"], runs["bm25"]], norm=None, method="rrf", params={"k": k}).to_dict()
    ours = _samples(tiny_eval / "realistic" / "rrf_bm25")
    assert set(fused) == set(ours) and len(ours) == 12
    for qid, row in ours.items():
        mine = [(doc_id(b["tool"]), b["score"]) for b in row["constrained"]]
        theirs = sorted(fused[qid].items(), key=lambda kv: -kv[1])
        assert [round(s, 6) for _, s in theirs[: len(mine)]] == [s for _, s in mine]
        for doc, score in mine:  # each tool's fused score; tied tools may only swap among themselves
            assert fused[qid][doc] == pytest.approx(score, abs=1e-6)
        assert all(s <= mine[-1][1] + 1e-6 for d, s in theirs if d not in dict(mine))


@pytest.fixture(scope="module")
def demo_baselines(tmp_path_factory) -> Path:
    """BM25 and dense (embedded MiniLM) on all 54 short realistic demo test queries (top 10): 5 of
    them share no term with any tool, so BM25's ranking of each is all zero-score padding."""
    out = tmp_path_factory.mktemp("export_baselines")
    run({"run": None, "catalog": {"path": None}, "parametric": False, "device": "cpu", "task": "evaluate",
         "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short"}},
         "baselines": {"bm25": {"kind": "bm25"}, "dense": {"kind": "dense"}},
         "decoding": {"beam_width": 10}, "metrics": {"ks": list(KS), "resamples": 10}, "logger": {"kind": "none"},
         "output_dir": str(out)})
    return out / "realistic"


def test_ranx_and_trec_eval_on_the_default_export_give_results_json_over_every_query(demo_baselines):
    """The run files as the evaluation wrote them hold every scored query, the all-padding ones
    too: ranx.evaluate and trec_eval's average without -c (over the run's queries) are results.json's."""
    ranx = pytest.importorskip("ranx", reason="ranx is not installed (the dev extra)")
    bm25 = _samples(demo_baselines / "bm25")
    all_padding = [q for q, r in bm25.items() if all(b["score"] == 0 for b in r["constrained"])]
    assert len(bm25) == 54 and len(all_padding) == 5
    for name in ("bm25", "dense"):
        folder = demo_baselines / name
        res = json.loads((folder / "results.json").read_text())
        qrels, run_ = read_qrels(folder / QRELS), read_run(folder / MODES["constrained"])
        assert set(run_) == set(qrels) == set(_samples(folder)) and res["n"] == 54
        got = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run_), [f"{m}@{k}" for k in KS for m in ("hit_rate", "recall", "ndcg")])
        per_q = trec_measures(qrels, run_)
        for k in KS:
            assert got[f"hit_rate@{k}"] == pytest.approx(res["metrics"][f"Rc@{k}"]["value"], abs=1e-12)
            assert got[f"recall@{k}"] == pytest.approx(res["metrics"][f"recall_c@{k}"]["value"], abs=1e-12)
            assert got[f"ndcg@{k}"] == pytest.approx(res["metrics"][f"ndcg_c@{k}"]["value"], abs=1e-12)
            no_c = sum(m[f"success_{k}"] for m in per_q.values()) / len(per_q)  # trec_eval without -c
            assert no_c == pytest.approx(res["metrics"][f"Rc@{k}"]["value"], abs=1e-12)
    # the case that moved: BM25's success@10 was 36/49 = 0.735 over the 49 queries left in its run
    assert json.loads((demo_baselines / "bm25" / "results.json").read_text())["metrics"]["Rc@10"]["value"] == 37 / 54


def test_ranx_rrf_of_the_bm25_and_dense_exports_is_our_rrf(demo_baselines):
    """ranx.fuse (RRF, our k) of the two default exports on all 54 queries: each query's fused
    scores are our reciprocal_rank_fusion of the two rankings, and ranx.evaluate of the fused run
    is our metrics' mean over our fused rankings."""
    ranx = pytest.importorskip("ranx", reason="ranx is not installed (the dev extra)")
    k = SystemConfig(kind="rrf").rrf_k
    runs = [ranx.Run.from_file(str(demo_baselines / name / MODES["constrained"]), kind="trec") for name in ("bm25", "dense")]
    fused = ranx.fuse(runs=runs, norm=None, method="rrf", params={"k": k})
    samples = [_samples(demo_baselines / name) for name in ("bm25", "dense")]
    ours = {q: reciprocal_rank_fusion([[b["tool"] for b in s[q]["constrained"]] for s in samples], k) for q in samples[0]}
    assert set(fused.to_dict()) == set(ours) and len(ours) == 54
    for q, ranking in ours.items():
        assert fused.to_dict()[q] == pytest.approx({doc_id(t): s for t, s in ranking}, abs=1e-9)
    # ranx orders tied fused scores its own way (numpy argsort, reversed); where no tie straddles
    # rank k the top k is decided by the scores, and ranx.evaluate's hit@k and recall@k are ours
    qrels = ranx.Qrels(read_qrels(demo_baselines / "bm25" / QRELS))
    mine = {q: item_metrics([t for t, _ in r], samples[0][q]["gold"], KS, "c_") for q, r in ours.items()}
    for k in KS:
        decided = [q for q, r in ours.items() if len(r) <= k or r[k - 1][1] - r[k][1] > 1e-9]
        assert len(decided) > 54 / 2  # measured: 43, 38, 35 of 54 at k = 1, 5, 10
        for metric, key in (("hit_rate", "c_hit"), ("recall", "c_recall")):
            per_q = dict(zip(fused.keys(), ranx.evaluate(qrels, fused, f"{metric}@{k}", return_mean=False)))
            assert {q: per_q[q] for q in decided} == pytest.approx({q: mine[q][f"{key}@{k}"] for q in decided}, abs=1e-12)


def test_trec_command_cuts_padding_only_when_asked_and_names_the_files_it_wrote(tiny_eval, tmp_path, capsys):
    from toolsense.export import trec

    for name in ("bm25", "model"):
        shutil.copytree(tiny_eval / "realistic" / name, tmp_path / name)
        for p in (tmp_path / name).glob("*.trec"):
            p.unlink()
    assert trec([str(tmp_path)]) == [tmp_path / "bm25", tmp_path / "model"]
    # a baseline has no free-form run: the message names what was written, nothing else
    assert capsys.readouterr().out.splitlines() == [f"wrote {tmp_path / 'bm25'}/{{run.constrained.trec,qrels.trec}}",
                                                    f"wrote {tmp_path / 'model'}/{{run.constrained.trec,run.free.trec,qrels.trec}}"]
    assert {p.name for p in (tmp_path / "bm25").glob("*.trec")} == {MODES["constrained"], QRELS}
    assert len((tmp_path / "bm25" / MODES["constrained"]).read_text().splitlines()) == 10 * 12
    trec(["--cut-padding", str(tmp_path / "bm25")])
    assert len((tmp_path / "bm25" / MODES["constrained"]).read_text().splitlines()) < 10 * 12
    trec(["--keep-padding", str(tmp_path / "bm25")])  # the default, still accepted
    assert len((tmp_path / "bm25" / MODES["constrained"]).read_text().splitlines()) == 10 * 12
    with pytest.raises(SystemExit, match="unknown option --cut"):
        trec(["--cut", str(tmp_path)])


def test_export_tree_rewrites_the_files_of_existing_results(tiny_eval):
    model_dir = tiny_eval / "realistic" / "model"
    before = (model_dir / MODES["free"]).read_text()
    for p in model_dir.glob("*.trec"):
        p.unlink()
    done = export_tree(tiny_eval)
    assert set(done) == {model_dir, tiny_eval / "realistic" / "bm25", tiny_eval / "realistic" / "rrf_bm25"}
    assert (model_dir / MODES["free"]).read_text() == before


def test_beir_layout_round_trips(demo_catalog, tmp_path):
    from toolsense.catalog import Query

    queries = [Query("1", "weather in Paris", ("SkyCast Weather&&current_weather",)),
               Query("g/2", "two tools", tuple(demo_catalog.names[:2]))]
    counts = write_beir(demo_catalog, queries, tmp_path)
    assert counts == {"corpus": len(demo_catalog), "queries": 2, "qrels": 3}
    corpus = [json.loads(x) for x in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    qs = [json.loads(x) for x in (tmp_path / "queries.jsonl").read_text().splitlines()]
    assert [c["metadata"]["name"] for c in corpus] == list(demo_catalog.names)
    assert {c["_id"] for c in corpus}.isdisjoint({q["_id"] for q in qs})
    assert [q["_id"] for q in qs] == ["1", "g/2"] and {c["title"] for c in corpus} == {""}  # the TREC files' ids
    assert corpus[0]["text"] == demo_catalog[demo_catalog.names[0]].text()
    header, *rows = (tmp_path / "qrels" / "test.tsv").read_text().splitlines()
    assert header == "query-id\tcorpus-id\tscore" and len(rows) == 3
    qrels = read_qrels(tmp_path / "qrels" / "test.tsv")
    ids = {c["_id"]: c["metadata"]["name"] for c in corpus}
    assert {from_doc_id(q["_id"]): {ids[d] for d in qrels[q["_id"]]} for q in qs} == \
        {q.query_id: set(q.tools) for q in queries}
    write_beir(demo_catalog, queries[:1], tmp_path / "titled", title=True)
    first = json.loads((tmp_path / "titled" / "corpus.jsonl").read_text().splitlines()[0])
    tool = demo_catalog[demo_catalog.names[0]]
    assert first["title"] == f"{tool.tool_title or tool.service} / {tool.api_title or tool.api}" and first["text"] == tool.text()
    with pytest.raises(DataError, match=r"query 'SkyCast Weather&&current_weather': its id is also a tool's id"):
        write_beir(demo_catalog, [Query(demo_catalog.names[0], "x", (demo_catalog.names[1],))], tmp_path / "clash")


def test_beir_cli_writes_what_beirs_own_loader_reads(tmp_path, demo_catalog):
    """``python -m toolsense.export beir`` on the demo catalog + benchmark, read back with BEIR's
    GenericDataLoader (the beir package, when installed) and compared with the benchmark."""
    import subprocess
    import sys

    from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "toolsense.export", "beir", "catalog=demo", "benchmark=demo_standard",
                           "benchmark.limit=7", f"output_dir={tmp_path}"], cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "126 tools, 7 queries" in proc.stdout
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    loader = pytest.importorskip("beir.datasets.data_loader", reason="the beir package is not installed (the dev extra)")
    corpus, queries, qrels = loader.GenericDataLoader(data_folder=str(folder)).load(split="test")
    bench = load_benchmark(BenchmarkConfig(loader="demo", split="test", style="verbose", limit=7))
    assert len(corpus) == len(demo_catalog) and len(queries) == 7
    assert {from_doc_id(q): queries[q] for q in queries} == {q.query_id: q.text for q in bench.items}
    assert {from_doc_id(q): {from_doc_id(d) for d in rel} for q, rel in qrels.items()} == \
        {q.query_id: set(q.tools) for q in bench.items}


def test_beirs_dense_retriever_and_evaluator_on_the_export_give_our_dense_numbers(tmp_path, demo_catalog):
    """BEIR's own path on the exported folder — GenericDataLoader, its SentenceBERT + exact search
    (cosine) with the same embedded MiniLM, EvaluateRetrieval.evaluate / top_k_accuracy — gives
    the Rc@k, recall@k and NDCG@k of our dense baseline on the same 40 queries; its query ids are
    the ones in our TREC files."""
    pytest.importorskip("beir.retrieval.evaluation", reason="the beir package is not installed (the dev extra)")
    from beir.datasets.data_loader import GenericDataLoader
    from beir.retrieval import models
    from beir.retrieval.evaluation import EvaluateRetrieval
    from beir.retrieval.search.dense import DenseRetrievalExactSearch

    from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
    from toolsense.models.encoders.loading import embedded_minilm_dir

    bench_cfg = {"loader": "demo", "split": "test", "style": "short", "limit": 40}
    out = tmp_path / "eval"
    run({"run": None, "catalog": {"path": None}, "parametric": False, "device": "cpu", "task": "evaluate",
         "benchmarks": {"realistic": bench_cfg}, "baselines": {"dense": {"kind": "dense"}},
         "decoding": {"beam_width": 10}, "metrics": {"ks": list(KS), "resamples": 10}, "logger": {"kind": "none"},
         "output_dir": str(out)})
    ours = json.loads((out / "realistic" / "dense" / "results.json").read_text())["metrics"]
    bench = load_benchmark(BenchmarkConfig(**bench_cfg))
    write_beir(demo_catalog, bench.items, tmp_path / "beir")
    corpus, queries, qrels = GenericDataLoader(data_folder=str(tmp_path / "beir")).load(split="test")
    assert (set(queries) == set(read_qrels(out / "realistic" / "dense" / QRELS))
            == set(read_run(out / "realistic" / "dense" / MODES["constrained"])))
    retriever = EvaluateRetrieval(DenseRetrievalExactSearch(models.SentenceBERT(str(embedded_minilm_dir())), batch_size=64,
                                                            show_progress_bar=False), score_function="cos_sim", k_values=list(KS))
    results = retriever.retrieve(corpus, queries)
    ndcg, _, recall, _ = retriever.evaluate(qrels, results, list(KS))
    acc = retriever.evaluate_custom(qrels, results, list(KS), metric="top_k_accuracy")
    for k in KS:
        assert acc[f"Accuracy@{k}"] == pytest.approx(ours[f"Rc@{k}"]["value"], abs=1e-5)
        assert recall[f"Recall@{k}"] == pytest.approx(ours[f"recall_c@{k}"]["value"], abs=1e-5)
        assert ndcg[f"NDCG@{k}"] == pytest.approx(ours[f"ndcg_c@{k}"]["value"], abs=1e-5)
    assert 0 < ours["Rc@1"]["value"] < ours["Rc@10"]["value"] < 1  # numbers that can disagree
