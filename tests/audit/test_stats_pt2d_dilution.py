import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from toolsense.audit import pt2d as pt2d_mod
from toolsense.audit.dilution import DilutionConfig, diluted_texts, run_dilution, target_lengths
from toolsense.audit.generator import GeneratorConfig, generate_traces
from toolsense.audit.pt2d import PT2DConfig, rank_tools, run_pt2d
from toolsense.audit.stats import _auroc_rows, auroc_by_partition, auroc_ci, paired_delta_ci


def test_vectorised_auroc_matches_sklearn_and_ci_brackets_the_point():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=(20, 50))
    s = rng.normal(size=(20, 50)) + y + rng.integers(0, 3, size=(20, 50))  # ties included
    ours = _auroc_rows(y, s)
    ref = [roc_auc_score(y[i], s[i]) for i in range(20)]
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    a = auroc_ci(y[0], s[0], n_boot=500)
    assert a.lo <= a.auroc <= a.hi and a.n == 50
    parts = np.array(["p"] * 25 + ["q"] * 25, dtype=object)
    one_class = np.r_[np.ones(25, int), y[0][25:]]
    res = auroc_by_partition(one_class, s[0], parts, n_boot=50)
    assert np.isnan(res["p"].auroc) and not np.isnan(res["q"].auroc)
    d = paired_delta_ci(y[0], s[0], np.zeros(50), n_boot=300)
    assert d.auroc == pytest.approx(0.5 - roc_auc_score(y[0], s[0]))
    assert d.lo <= d.auroc <= d.hi


@pytest.fixture(scope="module")
def pt2d_rows(demo_traces, tmp_path_factory):
    fit, ev = demo_traces.split(["0"], None)
    from types import SimpleNamespace
    stats = SimpleNamespace(n_boot=200, level=0.95, seed=0)
    out = tmp_path_factory.mktemp("pt2d") / "pt2d.jsonl"
    return run_pt2d(demo_traces, fit, ev, PT2DConfig(), stats, out), out, stats


def _auc(rows, view, feats):
    return next(r for r in rows if r["view"] == view and r["features"] == feats)["auroc"]["all"]["auroc"]


def test_pt2d_localises_the_planted_tool(pt2d_rows, demo_traces):
    rows, out, _ = pt2d_rows
    assert len(rows) == 3 * (1 + len(demo_traces.tools))
    for feats in ("char_2_5", "char_3_5"):
        assert _auc(rows, "full", feats) < 0.62
        assert _auc(rows, "list_files", feats) > 0.85
    assert _auc(rows, "full", "word_1_2") < 0.75
    assert rank_tools(rows)[0] == "list_files"
    planted = next(r for r in rows if r["view"] == "list_files" and r["features"] == "char_3_5")
    assert planted["gap"] > 0.25
    assert any("kt" in g for g, _ in planted["top_ngrams"]["label_1"][:3])
    assert any("pl" in g for g, _ in planted["top_ngrams"]["label_0"][:3])
    assert set(planted["auroc"]) == {"all", "1", "2", "3", "4", "5"}
    for tool in ("search_docs", "run_tests", "query_db", "fetch_logs"):
        assert _auc(rows, tool, "char_3_5") < 0.7


def test_pt2d_resumes_from_its_jsonl(pt2d_rows, demo_traces, monkeypatch):
    rows, out, stats = pt2d_rows
    monkeypatch.setattr(pt2d_mod, "fit_score", lambda *a, **k: pytest.fail("refit despite stored rows"))
    fit, ev = demo_traces.split(["0"], None)
    again = run_pt2d(demo_traces, fit, ev, PT2DConfig(), stats, out)
    assert [r["auroc"]["all"]["auroc"] for r in again] == [r["auroc"]["all"]["auroc"] for r in rows]


def test_no_shortcut_means_no_standout_tool(tmp_path, fast_stats):
    ts = generate_traces(GeneratorConfig(n_fit=120, n_eval_per_cluster=24, strength=0.5, seed=1))
    fit, ev = ts.split(["0"], None)
    rows = run_pt2d(ts, fit, ev, PT2DConfig(features=["char_3_5"]), fast_stats, tmp_path / "p.jsonl")
    assert _auc(rows, "list_files", "char_3_5") < 0.65


def test_duplicated_identifier_shows_in_the_second_tool(tmp_path, fast_stats):
    ts = generate_traces(GeneratorConfig(n_fit=120, n_eval_per_cluster=24, duplicate_in="fetch_logs", seed=2))
    fit, ev = ts.split(["0"], None)
    rows = run_pt2d(ts, fit, ev, PT2DConfig(features=["char_3_5"]), fast_stats, tmp_path / "p.jsonl")
    assert _auc(rows, "fetch_logs", "char_3_5") > 0.72 and _auc(rows, "list_files", "char_3_5") > 0.8


def test_dilution_sweeps_fall_monotonically(pt2d_rows, demo_traces, tmp_path):
    rows, _, stats = pt2d_rows
    fit, ev = demo_traces.split(["0"], None)
    cfg = DilutionConfig(ks=[0, 2, 10], seeds=[0, 1, 2])
    res = run_dilution(demo_traces, fit, ev, cfg, PT2DConfig(), rank_tools(rows), stats, tmp_path / "d.jsonl", rows)
    real = [r["auroc"] for r in res["real"]]
    # the paper's order: the probe (tool 2 of 5), then tools 1, 3, 4, 5
    assert res["order"] == ["list_files", "search_docs", "run_tests", "query_db", "fetch_logs"] and len(real) == 5
    assert real[0] == pytest.approx(_auc(rows, "list_files", "char_3_5"))
    assert all(b <= a + 0.02 for a, b in zip(real, real[1:])) and real[-1] < 0.62
    assert res["synthetic_pool"]["tools"] == ["search_docs", "run_tests", "query_db", "fetch_logs"]
    syn = {r["k"]: r for r in res["synthetic"]}
    assert syn[0]["mean"] == pytest.approx(real[0]) and syn[0]["sd"] == 0
    assert syn[10]["mean"] < syn[2]["mean"] < syn[0]["mean"] and syn[10]["mean"] < real[0] - 0.1
    assert len(syn[10]["per_seed"]) == 3 and syn[10]["sd"] > 0


def test_synthetic_sections_are_char_length_matched_on_the_demo(demo_traces):
    lengths = target_lengths(demo_traces, "list_files", "probe")
    texts = diluted_texts(demo_traces, "list_files", 3, np.random.default_rng(0), ["search_docs", "query_db"], lengths)
    for rec, text in zip(demo_traces.records[:20], texts):
        parts = text.split("\n")
        assert len(parts) == 4 and rec.section("list_files") in parts
        assert all(len(p) == len(rec.section("list_files")) for p in parts)
    with pytest.raises(ValueError, match="dilution.tool='nope' is not a tool"):
        run_dilution(demo_traces, None, None, DilutionConfig(tool="nope"), PT2DConfig(), ["list_files"], None, None)
