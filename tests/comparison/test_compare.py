"""Ablation tables: results.json files under sweep/run directories → one table, a row per
configuration (labelled experiment-tuning from the run's config.yaml; runs differing only in
trainer.seed averaged) or baseline, a column per benchmark × metric; duplicates of a baseline
fold, conflicting results are refused; retention, drift ratio, Cohen's d and plots from the files."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from PIL import Image

from toolsense.comparison.compare import CompareConfig, collect, comparison, comparison_table, run_compare
from toolsense.utils.io import DataError


def _est(v):
    return {"value": v, "lo": v - 0.1, "hi": v + 0.1}


def _write(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def _samples(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _run(root, name, experiment, tuning, rc1, acc, seed=None, extra=""):
    run = root / name
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(f"experiment: {experiment}\ntuning:\n  method: {tuning}\n"
                                     + (f"trainer:\n  seed: {seed}\n" if seed is not None else "") + extra)
    src = {"run": str(run), "stage": "stage2", "model": "tiny_random"}
    _write(run / "eval" / "standard" / "model" / "results.json", {
        "benchmark": "standard", "system": "tiny_random:stage2", "kind": "retrieval", "source": src,
        "metrics": {"Rc@1": _est(rc1), "Rf@1": _est(rc1 / 2), "IS@1": _est(0.5)}})
    _write(run / "eval" / "mcq" / "token" / "results.json", {
        "benchmark": "mcq", "system": "token", "kind": "mcq", "source": src, "chance": 0.25,
        "metrics": {"accuracy": _est(acc)}})
    _write(run / "eval" / "standard" / "bm25" / "results.json", {
        "benchmark": "standard", "system": "bm25", "kind": "retrieval", "source": {"baseline": {"kind": "bm25"}},
        "metrics": {"Rc@1": _est(0.7)}})
    _write(run / "eval" / "results.json", {"results": []})  # the combined summary: skipped
    return run


def test_one_row_per_run_and_baseline(tmp_path):
    _run(tmp_path, "0_tg-lora", "tg", "lora", 0.4, 0.3)
    _run(tmp_path, "1_tg_3fm-full", "tg_3fm", "full", 0.6, 0.5)
    comp = comparison(collect([tmp_path]), ["Rc@1", "Rf@1", "IS@1"])
    assert comp["rows"] == ["tg-lora", "tg_3fm-full", "bm25"]  # models first, then baselines once
    assert comp["columns"] == ["standard Rc@1", "standard Rf@1", "standard IS@1", "mcq token acc"]
    assert comp["cells"]["tg_3fm-full"]["standard Rc@1"]["value"] == 0.6
    assert comp["cells"]["tg-lora"]["mcq token acc"]["value"] == 0.3
    bm25 = comp["cells"]["bm25"]
    assert bm25["standard Rf@1"] is None and bm25["standard IS@1"] is None
    assert _est(0.7).items() <= bm25["standard Rc@1"].items()  # a baseline has no training seed: not a one-seed arm
    assert bm25["standard Rc@1"]["deterministic"] and not bm25["standard Rc@1"]["one_seed"]
    one = comp["cells"]["tg-lora"]["mcq token acc"]
    assert (one["n_seeds"], one["sd"], one["one_seed"]) == (1, None, True) and "one seed" in one["method"]
    table = comparison_table(comp).splitlines()
    assert table[2] == "| tg-lora | 40.0 [30.0, 50.0] † | 20.0 [10.0, 30.0] † | 0.50 [0.40, 0.60] † | 30.0 [20.0, 40.0] † (chance 25) |"
    assert table[4].startswith("| bm25 | 70.0 [60.0, 80.0] | — | — | —")  # deterministic: no seed mark
    assert "† one seed: one training run, not a configuration" in comparison_table(comp)


def test_headline_columns_are_the_default():
    assert CompareConfig().metrics == ["Rc@50", "Rf@50", "IS@50"]


def test_beam10_results_get_at_10_columns_not_dashes(tmp_path, capsys):
    """A decoding=beam10 sweep holds @1/@5/@10 metrics: the default @50 columns become @10 (the
    largest k evaluated below 50), Cohen's d follows (IS@10), and the substitution is said."""
    from toolsense.comparison.compare import available_metrics

    for name, builder, v in (("tg", "flat", 0.9), ("tg_h", "clustered", 0.5)):
        run = tmp_path / "sweep" / name
        (run).mkdir(parents=True)
        (run / "config.yaml").write_text(f"experiment: {name}\ntuning:\n  method: lora\nindex:\n  builder: {builder}\n")
        for bench, w in (("g1", v), ("g2", v - 0.2)):
            _write(run / "eval" / bench / "model" / "results.json", {
                "benchmark": bench, "system": "m", "kind": "retrieval", "source": {"run": str(run), "stage": "stage2"},
                "metrics": {f"{m}@{k}": _est(w) for m in ("Rc", "Rf", "IS") for k in (1, 5, 10)}})
    results = collect([tmp_path / "sweep"])
    assert available_metrics(results, ["Rc@50", "IS@3", "Rf@1", "Rc@0", "NDCG@10"]) == {
        "Rc@50": "Rc@10", "IS@3": "IS@1", "Rf@1": "Rf@1", "Rc@0": "Rc@1", "NDCG@10": "NDCG@10"}
    comp = run_compare(CompareConfig(roots=[str(tmp_path / "sweep")], plots=False), tmp_path / "out")
    assert comp["columns"][:3] == ["g1 Rc@10", "g1 Rf@10", "g1 IS@10"]
    assert comp["cells"]["tg-lora"]["g1 IS@10"]["value"] == 0.9
    assert comp["statistics"]["cohens_d"]["metric"] == "IS@10" and comp["statistics"]["cohens_d"]["flat"] == [0.9, 0.7]
    assert "—" not in (tmp_path / "out" / "comparison.md").read_text().split("\n\n")[0]
    assert "no result holds Rc@50; showing Rc@10 instead" in capsys.readouterr().out
    assert json.loads((tmp_path / "out" / "comparison.json").read_text())["metrics"] == ["Rc@10", "Rf@10", "IS@10"]


def _hits(n, k):
    return [{"item_id": f"q{i}", "metrics": {"c_hit@1": float(i < k), "f_hit@1": float(i < k // 2)}} for i in range(n)]


def test_seeds_of_one_configuration_are_averaged_with_a_pooled_interval(tmp_path):
    for seed, (rc, k) in enumerate([(0.4, 4), (0.5, 5)]):
        run = _run(tmp_path, f"seed{seed}", "tg", "lora", rc, 0.3, seed=seed)
        _samples(run / "eval" / "standard" / "model" / "samples.jsonl", _hits(10, k))
    comp = comparison(collect([tmp_path]), ["Rc@1", "IS@1"], resamples=1000, seed=0)
    assert comp["rows"] == ["tg-lora", "bm25"]  # one configuration, not one row per seed
    cell = comp["cells"]["tg-lora"]["standard Rc@1"]
    assert cell["value"] == pytest.approx(0.45) and cell["sd"] == pytest.approx(0.05 * 2**0.5) and cell["n_seeds"] == 2
    # seeds and items are both sampled: se² = s²(seed means) / 2 + cov(seed 0, seed 1 over queries) / 10
    # = 0.005 / 2 + (2 / 9) / 10 = 0.024722; Welch–Satterthwaite df = se⁴ / (0.0025² / 1 + 0.022222² / 9) = 10.0.
    # The items-only interval of the per-item means (1 ×4, 0.5, 0 ×5) has the same se² here, s² / 10 = (2.225 / 9) / 10,
    # on 9 df: it is the wider (t₉ 2.2622 > t₁₀ 2.2281), and is given.
    se = (0.0025 + 0.2 / 9) ** 0.5
    assert cell["two_level_se"] == pytest.approx(se) and cell["two_level_df"] == pytest.approx(10.0, rel=1e-3) and not cell["one_seed"]
    assert cell["items_floor"] and cell["se"] == pytest.approx(se) and cell["df"] == 9
    assert (cell["lo"], cell["hi"]) == pytest.approx((0.45 - 2.2622 * se, 0.45 + 2.2622 * se), abs=1e-4)
    rows = np.array([1.0] * 4 + [0.0] * 6 + [1.0] * 5 + [0.0] * 5)  # the 20 (seed, query) rows as if independent
    naive = np.quantile(rows[np.random.default_rng(0).integers(0, 20, size=(1000, 20))].mean(axis=1), [0.025, 0.975])
    assert cell["hi"] - cell["lo"] > naive[1] - naive[0]  # the row bootstrap is narrower than the data allow
    is_cell = comp["cells"]["tg-lora"]["standard IS@1"]
    assert is_cell["value"] == pytest.approx((2 + 2) / (4 + 5)) and is_cell["hits"] == 9  # Rf/Rc of pooled hits
    assert is_cell["few_hits"] and "⚑ 9 hits" in comparison_table(comp)
    assert comp["cells"]["tg-lora"]["mcq token acc"]["sd"] == 0.0  # no samples.jsonl: mean ± sd, no interval
    assert comp["cells"]["tg-lora"]["mcq token acc"]["lo"] is None
    assert comparison_table(comp).splitlines()[2].startswith(
        f"| tg-lora | 45.0 [{100 * cell['lo']:.1f}, {100 * cell['hi']:.1f}] n=2 sd 7.1 |")
    assert "n = training seeds of the configuration" in comparison_table(comp) and "† one seed" not in comparison_table(comp)


def test_configurations_sharing_a_label_are_named_by_what_differs(tmp_path):
    _run(tmp_path, "0", "ablate_formats", "lora", 0.4, 0.3, extra="memorization:\n  formats: [desc2tok]\n")
    _run(tmp_path, "1", "ablate_formats", "lora", 0.5, 0.3, extra="memorization:\n  formats: [desc2tok, mcts]\n")
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["rows"][:2] == ["ablate_formats-lora (memorization.formats=desc2tok)",
                                "ablate_formats-lora (memorization.formats=desc2tok+mcts)"]


def test_a_run_trained_here_and_one_restored_from_an_archive_are_one_configuration(tmp_path, monkeypatch):
    """The archive writes the cache as $TOOLSENSE_CACHE; a seed trained here after a restore still
    names the cache by its absolute path. They are seeds of one configuration, not two rows."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOOLSENSE_CACHE", str(cache))
    _run(tmp_path / "runs", "0_tg-lora", "tg", "lora", 0.4, 0.3, seed=0,
         extra="catalog:\n  path: $TOOLSENSE_CACHE/catalogs/study_tools.jsonl\n")
    _run(tmp_path / "runs", "2_tg-lora", "tg", "lora", 0.5, 0.3, seed=1,
         extra=f"catalog:\n  path: {cache}/catalogs/study_tools.jsonl\n")
    _run(tmp_path / "runs", "3_tg-lora", "tg", "lora", 0.6, 0.3, seed=2, extra="catalog:\n  path: /elsewhere/study_tools.jsonl\n")
    comp = comparison(collect([tmp_path / "runs"]), ["Rc@1"])
    assert comp["rows"][:2] == ["tg-lora (catalog.path=$TOOLSENSE_CACHE/catalogs/study_tools.jsonl)",
                                "tg-lora (catalog.path=/elsewhere/study_tools.jsonl)"]  # another catalog stays apart
    assert comp["cells"][comp["rows"][0]]["standard Rc@1"]["value"] == pytest.approx(0.45)  # seeds 0 and 1 pooled


def test_conflicting_baselines_and_bad_files_are_named(tmp_path):
    a = _run(tmp_path / "a", "r", "tg", "lora", 0.4, 0.3)
    b = _run(tmp_path / "b", "r2", "tg_h", "lora", 0.4, 0.3)
    path = b / "eval" / "standard" / "bm25" / "results.json"
    res = json.loads(path.read_text())
    res["metrics"]["Rc@1"] = _est(0.2)  # BM25 on another benchmark file: not the same baseline
    path.write_text(json.dumps(res))
    with pytest.raises(DataError, match=r"bm25/results.json: a second, different result for 'bm25' / 'standard Rc@1'"):
        comparison(collect([tmp_path]), ["Rc@1"])
    (a / "eval" / "broken").mkdir()
    (a / "eval" / "broken" / "results.json").write_text('{"benchmark": ')
    with pytest.raises(DataError, match=r"broken/results.json:1: not valid JSON"):
        collect([a])
    with pytest.raises(FileNotFoundError, match="roots: .*nowhere does not exist"):
        collect([tmp_path / "nowhere"])


def _drift(run, virtual=0.25, base=0.05):
    _write(run / "eval" / "drift" / "drift.json", {"run": str(run), "pairs": [
        {"from": "base", "to": "stage1", "input": {"virtual": virtual, "base_vocab": base, "cosine_change": 0.1}},
        {"from": "stage1", "to": "stage2", "input": {"virtual": 0.125, "base_vocab": 0.0, "cosine_change": -0.02}}]})


def test_drift_files_add_ratio_and_cosine_change_to_their_run(tmp_path):
    run = _run(tmp_path, "0_tg-lora", "tg", "lora", 0.4, 0.3)
    _drift(run)
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["columns"][-8:-4] == ["drift base->stage1 virtual", "drift base->stage1 base",
                                      "drift base->stage1 ratio", "drift base->stage1 Δcos"]
    ratio = comp["cells"]["tg-lora"]["drift base->stage1 ratio"]
    assert ratio["value"] == pytest.approx(5.0) and ratio["one_seed"] and ratio.get("lo") is None  # 0.25 / 0.05, one run
    assert comp["cells"]["tg-lora"]["drift stage1->stage2 ratio"] is None  # frozen base rows: no ratio
    assert comparison_table(comp).splitlines()[2].endswith(
        "| 0.2500 † | 0.0500 † | 5.0000 † | 0.1000 † | 0.1250 † | 0.0000 † | — | -0.0200 † |")  # one run: marked
    _write(run / "eval" / "drift" / "drift.json", {"pairs": []})
    with pytest.raises(DataError, match=r"drift.json: field 'pairs' or 'run' is missing"):
        collect([tmp_path])


def _probe(run, stage, correct, golds=None, **extra):
    d = run / "eval" / ("" if stage == "stage2" else stage) / "mcq" / "token"
    _write(d / "results.json", {"benchmark": "mcq", "system": "token", "kind": "mcq", **extra,
                                "source": {"run": str(run), "stage": stage},
                                "metrics": {"accuracy": _est(sum(correct) / len(correct))}})
    golds = golds or ["A"] * len(correct)
    _samples(d / "samples.jsonl", [{"item_id": f"m{i}", "correct": bool(c), "gold": g} for i, (c, g) in enumerate(zip(correct, golds))])


def test_retention_is_the_paired_stage2_minus_stage1_difference(tmp_path):
    run = tmp_path / "0_tg-lora"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("experiment: tg\ntuning:\n  method: lora\n")
    _probe(run, "stage1", [1, 1, 1, 1, 0, 0, 0, 0], golds=list("AAABAAAB"))
    _probe(run, "stage2", [1, 1, 0, 0, 0, 0, 0, 0], majority_rate=0.6)  # two items forgotten, none learnt
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["rows"] == ["tg-lora", "tg-lora:stage1"]
    ret = comp["cells"]["tg-lora"]["retention mcq token Δacc"]
    assert ret["value"] == pytest.approx(-0.25) and ret["n_items"] == 8 and ret["n_pairs"] == 1
    assert -1.0 <= ret["lo"] < ret["value"] and ret["hi"] == 0.0  # paired: no item improved, so no draw is > 0
    assert comp["cells"]["tg-lora:stage1"]["mcq token acc"]["majority_rate"] == 0.75  # gold A in 6 of 8 (samples.jsonl)
    assert comp["cells"]["tg-lora"]["mcq token acc"]["majority_rate"] == 0.6  # results.json's own field wins
    assert "| -25.0 [" in comparison_table(comp)


def _is_run(root, name, builder, values):
    run = root / name
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(f"experiment: {name}\ntuning:\n  method: lora\nindex:\n  builder: {builder}\n")
    for bench, v in zip(("g1", "g2"), values):
        _write(run / "eval" / bench / "model" / "results.json", {
            "benchmark": bench, "system": "m", "kind": "retrieval", "source": {"run": str(run), "stage": "stage2"},
            "metrics": {"Rc@50": _est(0.8), "Rf@50": _est(0.8 * v), "IS@50": _est(v)}})
    return run


def test_cohens_d_between_flat_and_hierarchical_configurations(tmp_path):
    _is_run(tmp_path, "tg", "flat", (0.9, 0.7))
    _is_run(tmp_path, "tg_h", "clustered", (0.5, 0.3))
    d = comparison(collect([tmp_path]), ["IS@50"])["statistics"]["cohens_d"]
    # units: (configuration, benchmark); means 0.8 vs 0.4, both variances 0.02 -> pooled sd sqrt(0.02)
    assert d["flat"] == [0.9, 0.7] and d["hierarchical"] == [0.5, 0.3]
    assert d["d"] == pytest.approx(0.4 / 0.02**0.5)


def test_run_compare_writes_table_csv_json_and_plots(tmp_path, capsys):
    run = _is_run(tmp_path / "sweep", "tg", "flat", (0.9, 0.7))
    _is_run(tmp_path / "sweep", "tg_h", "clustered", (0.5, 0.3))
    _probe(run, "stage2", [1, 0, 1, 0])
    _drift(run)
    comp = run_compare(CompareConfig(roots=[str(tmp_path / "sweep")]), tmp_path / "out")
    md = (tmp_path / "out" / "comparison.md").read_text()
    assert md.startswith("| system | g1 Rc@50 | g1 Rf@50 | g1 IS@50 | g2 Rc@50 |")
    assert ("Cohen's d (IS@50, flat − hierarchical; unit: one configuration's seed-pooled value on one retrieval benchmark "
            "(Stage-2 rows; few-hit IS left out)): d = 2.83 [") in md
    lines = list(csv.DictReader(open(tmp_path / "out" / "comparison.csv")))
    assert {"system": "tg_h-lora", "column": "g2 IS@50", "value": "0.3"}.items() <= next(
        r for r in lines if r["system"] == "tg_h-lora" and r["column"] == "g2 IS@50").items()
    saved = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert saved["cells"]["tg-lora"]["g1 IS@50"]["value"] == 0.9 and "tg-lora | g1 Rc@50" in saved["sources"]
    names = sorted(p.split("/")[-1] for p in comp["plots"])
    assert names == ["comparison_drift.png", "comparison_is_by_configuration.png", "comparison_probe_accuracy.png",
                     "comparison_recall_by_benchmark.png"]
    for p in comp["plots"]:
        with Image.open(p) as im:
            assert im.format == "PNG" and im.size[0] > 100
        assert (tmp_path / "out" / p.split("/")[-1]).stat().st_size > 5000
    assert "wrote" in capsys.readouterr().out


def test_results_find_their_run_wherever_they_lie(tmp_path):
    """A result records its run relative to its own folder (context.portable_source); the old
    absolute form, a path of the machine that trained it, is located by where the result lies:
    unpacked anywhere, its run is found and its rows are the same."""
    from toolsense.comparison.runs import run_dir_of
    from toolsense.evaluation.context import portable_source

    run = _run(tmp_path / "here", "0_tg-lora", "tg", "lora", 0.4, 0.3)
    res_dir = run / "eval" / "standard" / "model"
    src = portable_source({"run": str(run), "stage": "stage2", "model": "m"}, res_dir)
    assert src == {"run": "../../..", "stage": "stage2", "model": "m"}
    assert portable_source({"run": None, "stage": "untrained", "model": "m"}, res_dir)["run"] is None
    assert run_dir_of({"source": src, "_path": str(res_dir / "results.json")}) == str(run.resolve())
    moved = {"source": {"run": "/another/machine/outputs/grid/0_tg-lora"}, "_path": str(res_dir / "results.json")}
    assert run_dir_of(moved) == str(run.resolve())  # the old absolute form: the ancestor of that name
    elsewhere = {"source": {"run": "/another/machine/0_other"}, "_path": str(res_dir / "results.json")}
    assert run_dir_of(elsewhere) == "/another/machine/0_other"  # no such ancestor: as recorded
    assert run_dir_of({"source": {"baseline": {"kind": "bm25"}}, "_path": "x"}) is None
    comp = comparison(collect([tmp_path / "here"]), ["Rc@1"])
    assert comp["rows"] == ["tg-lora", "bm25"]  # the run's config.yaml read through the located run


def test_tiers_get_columns_of_their_own_outside_the_statistics(tmp_path):
    """A benchmark with tiers (RRB easy / medium / hard) adds `<bench> [<tier>] <metric>` columns after
    the retrieval ones, each the tier's estimate as written; Cohen's d and the plots keep to the whole
    benchmark's columns, and a benchmark with one tier adds none."""
    for name, builder, v in (("tg", "flat", 0.9), ("tg_h", "clustered", 0.5)):
        run = _is_run(tmp_path, name, builder, (v, v - 0.2))
        res_path = run / "eval" / "g1" / "model" / "results.json"
        res = json.loads(res_path.read_text())
        res["tiers"] = {"easy": {"n": 3, "metrics": {"IS@50": _est(v + 0.05)}}, "hard": {"n": 2, "metrics": {"IS@50": _est(v - 0.05)}}}
        _write(res_path, res)
        g2 = run / "eval" / "g2" / "model" / "results.json"
        _write(g2, {**json.loads(g2.read_text()), "tiers": {"all": {"n": 5, "metrics": {"IS@50": _est(0.1)}}}})
    comp = comparison(collect([tmp_path]), ["IS@50"])
    assert comp["columns"] == ["g1 IS@50", "g2 IS@50", "g1 [easy] IS@50", "g1 [hard] IS@50"]
    assert comp["tier_columns"] == ["g1 [easy] IS@50", "g1 [hard] IS@50"]
    assert comp["cells"]["tg-lora"]["g1 [hard] IS@50"]["value"] == pytest.approx(0.85)
    assert _est(0.55).items() <= comp["cells"]["tg_h-lora"]["g1 [easy] IS@50"].items()
    d = comp["statistics"]["cohens_d"]
    assert d["flat"] == [0.9, 0.7] and d["hierarchical"] == [0.5, 0.3]  # the units: benchmarks, never tiers


def test_seeded_tier_cells_get_the_pooled_interval_over_the_tiers_items(tmp_path):
    """Two seeds of tg on 10 queries (tier easy: q0-q4, hard: q5-q9): each tier cell is the main cells' two-level
    interval (seed_stats.seed_mean) over that tier's items — it was mean ± sd with no interval; a configuration of one
    seed keeps its tier estimate as written; the tier columns stay out of the significance tests."""
    from toolsense.comparison.seed_stats import seed_mean

    hits = {("tg", 0): [1, 1, 1, 0, 0, 1, 0, 0, 0, 0], ("tg", 1): [1, 1, 0, 0, 0, 1, 1, 0, 0, 0], ("tg_h", 0): [1] * 3 + [0] * 7}
    for n, ((exp, seed), h) in enumerate(hits.items()):
        run = _run(tmp_path, f"{n}_{exp}", exp, "lora", sum(h) / 10, 0.3, seed=seed)
        folder = run / "eval" / "standard" / "model"
        _samples(folder / "samples.jsonl", [{"item_id": f"q{i}", "tier": "easy" if i < 5 else "hard",
                                             "metrics": {"c_hit@1": float(v), "f_hit@1": float(v)}} for i, v in enumerate(h)])
        res = json.loads((folder / "results.json").read_text())
        res["tiers"] = {t: {"n": 5, "metrics": {"Rc@1": _est(sum(h[j:j + 5]) / 5)}} for t, j in (("easy", 0), ("hard", 5))}
        _write(folder / "results.json", res)
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    for tier, j in (("easy", 0), ("hard", 5)):
        cell = comp["cells"]["tg-lora"][f"standard [{tier}] Rc@1"]
        want = seed_mean({s: {f"q{i}": float(hits[("tg", s)][i]) for i in range(j, j + 5)} for s in (0, 1)})
        assert cell["lo"] is not None and (cell["value"], cell["lo"], cell["hi"]) == pytest.approx((want["value"], want["lo"], want["hi"]))
        assert cell["n_seeds"] == 2 and cell["n_items"] == 5 and "mean ± sd" not in cell["method"]
    assert comp["cells"]["tg-lora"]["standard [easy] Rc@1"]["value"] == pytest.approx(0.5)
    assert _est(0.6).items() <= comp["cells"]["tg_h-lora"]["standard [easy] Rc@1"].items()  # one seed: as written
    tested = {t["column"] for t in comp["statistics"]["significance"]["tests"]}
    assert tested == {"standard Rc@1"}
    easy = comp["cells"]["tg-lora"]["standard [easy] Rc@1"]
    assert f"50.0 [{100 * easy['lo']:.1f}, {100 * easy['hi']:.1f}] n=2 sd 14.1" in comparison_table(comp)


def _fp(catalog, sha="b" * 64):
    return {"evaluation": "retrieval", "benchmark": {"sha256": sha, "loader": "toolbench", "split": "test", "style": None,
                                                     "missing": "count"},
            "decoding": {"top": 50, "ks": [1]}, "system": {"baseline": {"kind": "bm25"}, "catalog_sha256": catalog}}


def test_equal_numbers_on_other_catalogs_are_not_one_baseline(tmp_path):
    """Issue 38: two bm25 results on different catalogs with equal numbers merged into one row
    ("2 results, 1 row"); the fingerprints tell them apart and the second is refused naming why.
    The same baseline evaluated again beside another run (same fingerprint) still folds."""
    a = _run(tmp_path / "a", "r", "tg", "lora", 0.4, 0.3)
    b = _run(tmp_path / "b", "r2", "tg_h", "lora", 0.4, 0.3)
    for run, catalog in ((a, "c1"), (b, "c1")):
        path = run / "eval" / "standard" / "bm25" / "results.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "n": 6, "fingerprint": _fp(catalog)}))
    assert comparison(collect([tmp_path]), ["Rc@1"])["rows"] == ["tg-lora", "tg_h-lora", "bm25"]  # one evaluation, once
    path = b / "eval" / "standard" / "bm25" / "results.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "fingerprint": _fp("c2")}))
    with pytest.raises(DataError, match=r"a second, different result for 'bm25' / 'standard Rc@1' \(first: .*; "
                                        r"system.catalog_sha256: 'c1' \(on disk\) vs 'c2' \(now\)\)"):
        comparison(collect([tmp_path]), ["Rc@1"])


def test_a_column_is_mixed_only_by_cells_that_hold_a_value():
    """A baseline has no Rf: its empty Rf cells on other items are not a mix to warn of."""
    from toolsense.comparison.item_sets import mixed_items

    six, other = ("a" * 64, None, None, None, 6), ("b" * 64, None, None, None, 24)
    items = {"G3 Rc@1": {"bm25": {six}, "dense": {other}}, "G3 Rf@1": {"bm25": {six}, "dense": {other}}}
    cells = {"bm25": {"G3 Rc@1": _est(0.5), "G3 Rf@1": {"value": None}}, "dense": {"G3 Rc@1": _est(0.4)}}
    assert mixed_items(items, cells) == {"G3 Rc@1": {"bm25": "n=6, benchmark aaaaaaaaaaaa", "dense": "n=24, benchmark bbbbbbbbbbbb"}}
    cells["dense"]["G3 Rf@1"] = _est(0.2)
    assert list(mixed_items(items, cells)) == ["G3 Rc@1"]  # one valued cell alone is not a mix
    cells["bm25"]["G3 Rf@1"] = _est(0.3)
    assert list(mixed_items(items, cells)) == ["G3 Rc@1", "G3 Rf@1"]


def test_cells_of_one_column_on_other_items_are_marked(tmp_path):
    """Issue 38: bm25 on 6 G3 queries and dense on 24 other G3 queries sat in one "G3" column
    unannotated. Cells of a column resting on other items carry ≠ and the table says which."""
    for system, n, sha in (("bm25", 6, "a" * 64), ("dense", 24, "b" * 64)):
        _write(tmp_path / "e" / "G3" / system / "results.json", {
            "benchmark": "G3", "system": system, "kind": "retrieval", "source": {"baseline": {"kind": system}}, "n": n,
            "hashes": {"benchmark_sha256": sha}, "metrics": {"Rc@1": _est(0.5)}})
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["mixed_items"] == {"G3 Rc@1": {"bm25": "n=6, benchmark aaaaaaaaaaaa", "dense": "n=24, benchmark bbbbbbbbbbbb"}}
    table = comparison_table(comp)
    assert "| bm25 | 50.0 [40.0, 60.0] ≠ |\n| dense | 50.0 [40.0, 60.0] ≠ |" in table
    assert "≠ 'G3 Rc@1' mixes item sets, its cells are not comparable: bm25: n=6, benchmark aaaaaaaaaaaa; dense: n=24" in table
    same = tmp_path / "e" / "G3" / "dense" / "results.json"
    same.write_text(json.dumps({**json.loads(same.read_text()), "n": 6, "hashes": {"benchmark_sha256": "a" * 64}}))
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["mixed_items"] == {} and "≠" not in comparison_table(comp)  # the same items: side by side as before
