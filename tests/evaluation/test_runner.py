import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolsense.evaluation.runner import run

ROOT = Path(__file__).resolve().parents[2]


def _cfg(run_dir, out, **extra):
    cfg = {
        "run": str(run_dir), "stage": "stage2", "device": "cpu", "task": "evaluate", "parametric": True,
        "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 12},
                       "qa": {"loader": "qa", "limit": 10}},  # the demo probes (no path)
        "baselines": {"bm25": {"kind": "bm25"}},
        "decoding": {"beam_width": 10, "batch_size": 4}, "metrics": {"ks": [1, 5, 10], "resamples": 200},
        "probe": {"modes": ["token", "control"]},
        "logger": {"kind": "none"}, "output_dir": str(out),
    }
    cfg.update(extra)
    return cfg


def test_run_dir_evaluation_writes_results_samples_and_one_table(tiny_run, tmp_path, capsys):
    summary = run(_cfg(tiny_run, tmp_path))
    res = {(r["benchmark"], r["system"]): r for r in summary["results"]}
    assert set(res) == {("realistic", "tiny_random:stage2"), ("realistic", "bm25"), ("qa", "token"), ("qa", "control")}
    model = res[("realistic", "tiny_random:stage2")]
    assert model["n"] == 12 and model["missing"]["count"] == 0
    assert len(model["hashes"]["index_sha256"]) == 64 and len(model["hashes"]["benchmark_sha256"]) == 64
    assert model["git_sha"] and model["config"]["decoding"]["beam_width"] == 10
    rows = [json.loads(x) for x in (tmp_path / "realistic" / "model" / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    from toolsense.catalog import load_demo_catalog

    names = set(load_demo_catalog().names)
    for r in rows:
        assert len(r["constrained"]) == 10 and all(x["tool"] in names for x in r["constrained"])
        assert len(r["free"]) == 10 and "Pick the tool." in r["prompt"] and "Query: " + r["query"] in r["prompt"]
    rc1 = sum(any(g == r["constrained"][0]["tool"] for g in r["gold"]) for r in rows) / 12
    assert model["metrics"]["Rc@1"]["value"] == pytest.approx(rc1)
    rf = model["metrics"]["Rf@5"]["value"]
    rc = model["metrics"]["Rc@5"]["value"]
    assert model["metrics"]["IS@5"]["value"] == pytest.approx(0.0 if rc == 0 else rf / rc)
    assert set(model["tiers"]) <= {"1-tool", "2-tool", "3-tool"} and sum(t["n"] for t in model["tiers"].values()) == 12
    assert "IS@1" not in res[("realistic", "bm25")]["metrics"]
    table = (tmp_path / "table.md").read_text()
    lines = table.splitlines()
    tier_rows = [x for x in lines if x.startswith("| realistic [")]
    n_tiers = sum(len(r["tiers"]) for r in res.values() if len(r.get("tiers") or {}) > 1)
    assert len(lines) - len(tier_rows) == 2 + 4 and len(tier_rows) == n_tiers > 0
    assert "| realistic | bm25 | 12 |" in table
    assert table in capsys.readouterr().out
    # resume: a second run finds every item done and recomputes nothing
    before = (tmp_path / "realistic" / "model" / "samples.jsonl").read_text()
    again = run(_cfg(tiny_run, tmp_path))
    assert (tmp_path / "realistic" / "model" / "samples.jsonl").read_text() == before
    assert again["results"][0]["metrics"] == summary["results"][0]["metrics"]


def test_missing_gold_tools_are_reported_not_dropped(tiny_run, tmp_path):
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"query_id": "a", "query": "weather now",
                                 "tools": ["SkyCast Weather&&current_weather", "Ghost&&tool"]}) + "\n"
                     + json.dumps({"query_id": "b", "query": "haunted", "tools": ["Ghost&&tool"]}) + "\n")
    cfg = _cfg(tiny_run, tmp_path / "out", benchmarks={"custom": {"loader": "query_jsonl", "path": str(qfile)}}, baselines={})
    res = run(cfg)["results"][0]
    assert res["missing"] == {"count": 1, "queries_affected": 2, "names": ["Ghost&&tool"], "policy": "count", "queries_dropped": 0}
    rows = [json.loads(x) for x in (tmp_path / "out" / "custom" / "model" / "samples.jsonl").read_text().splitlines()]
    assert rows[1]["missing_gold"] == ["Ghost&&tool"] and rows[1]["metrics"]["c_hit@10"] == 0.0
    assert rows[0]["metrics"]["c_recall@10"] <= 0.5  # the missing tool stays in the denominator


def test_cli_untrained_model_with_hydra(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "evaluate.py", "model=tiny_random", "benchmark=demo_standard", "benchmark.limit=6", "baseline=dense",
           "decoding=beam10", "metrics.resamples=100", f"output_dir={tmp_path}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "results.json").read_text())
    systems = [r["system"] for r in summary["results"]]
    assert systems == ["tiny_random:untrained", "dense"]
    assert summary["results"][0]["source"] == {"run": None, "stage": "untrained", "model": "tiny_random"}
    assert "| standard | dense | 6 |" in proc.stdout


def test_unknown_config_field_is_named(tiny_run, tmp_path):
    cfg = _cfg(tiny_run, tmp_path, decoding={"beam_widht": 3})
    with pytest.raises(ValueError, match=r"decoding: unknown field\(s\) \['beam_widht'\]"):
        run(cfg)
    with pytest.raises(ValueError, match=r"metrics.ks must lie in \[1, decoding.beam_width=5\], got \[10\]"):
        run(_cfg(tiny_run, tmp_path, decoding={"beam_width": 5}, metrics={"ks": [1, 10]}))


def _ranker(rankings):
    """A ranker whose constrained lists are given by hand, per query id."""
    from toolsense.decoding.retrieval import Retrieved

    def run_(queries):
        for q in queries:
            yield Retrieved(q, "p", [{"tool": t, "score": 0.0} for t in rankings[q.query_id]], None)
    return run_


@pytest.mark.parametrize("policy,n,expected", [
    # count: X and Y stay gold (misses). Rc@1 = (1+0+0+1)/4; recall@1 = (1/2+0+0+1)/4; Rc@2 = 3/4; recall@2 = (1/2+0+1/2+1)/4
    ("count", 4, {"Rc@1": 0.5, "recall_c@1": 0.375, "Rc@2": 0.75, "recall_c@2": 0.5}),
    # drop: q1 gold {A}, q2 dropped (only X), q3 gold {B}, q4 {C}: Rc@1 = 2/3, every gold in the top 2
    ("drop", 3, {"Rc@1": 2 / 3, "recall_c@1": 2 / 3, "Rc@2": 1.0, "recall_c@2": 1.0}),
])
def test_missing_gold_policy_hand_computed(tmp_path, policy, n, expected):
    from toolsense.catalog import Query
    from toolsense.evaluation.benchmarks import Benchmark, BenchmarkConfig
    from toolsense.evaluation.config import MetricsConfig
    from toolsense.evaluation.tasks import evaluate_ranking

    qs = [Query("q1", "a", ("S&&A", "S&&X")), Query("q2", "b", ("S&&X",)), Query("q3", "c", ("S&&B", "S&&Y")),
          Query("q4", "d", ("S&&C",))]
    bench = Benchmark("toy", "retrieval", qs, config=BenchmarkConfig(loader="query_jsonl", missing=policy))
    rankings = {"q1": ["S&&A", "S&&B", "S&&C"], "q2": ["S&&A", "S&&B", "S&&C"], "q3": ["S&&C", "S&&B", "S&&A"],
                "q4": ["S&&C", "S&&A", "S&&B"]}
    res = evaluate_ranking(bench, "hand", _ranker(rankings), {"S&&A", "S&&B", "S&&C"}, MetricsConfig(ks=[1, 2], resamples=50),
                           tmp_path, {})
    assert res["n"] == n
    for k, v in expected.items():
        assert res["metrics"][k]["value"] == pytest.approx(v), k
    assert res["missing"] == {"count": 2, "queries_affected": 3, "names": ["S&&X", "S&&Y"], "policy": policy,
                              "queries_dropped": 4 - n}
    rows = {r["item_id"]: r for r in map(json.loads, (tmp_path / "samples.jsonl").read_text().splitlines())}
    assert rows["q1"]["missing_gold"] == ["S&&X"]
    assert rows["q1"]["gold"] == (["S&&A", "S&&X"] if policy == "count" else ["S&&A"])


def _counting(monkeypatch):
    """Count the queries parametric retrieval actually ranks."""
    from toolsense.decoding.retrieval import Retriever

    ranked = []
    orig = Retriever.run

    def run_(self, queries):
        ranked.extend(q.query_id for q in queries)
        yield from orig(self, queries)

    monkeypatch.setattr(Retriever, "run", run_)
    return ranked


def _model_samples(out):
    return (out / "realistic" / "model" / "samples.jsonl").read_text()


def test_stage2_then_stage1_in_one_output_dir_is_refused_naming_stage(tiny_run, tmp_path, monkeypatch):
    """The bug: stage1 evaluated into stage2's output dir reused stage2's samples under stage1's label."""
    from toolsense.evaluation.fingerprint import FingerprintMismatch

    ranked = _counting(monkeypatch)
    out, fresh = tmp_path / "shared", tmp_path / "fresh"
    run(_cfg(tiny_run, out, stage="stage2"))
    stage2_samples = _model_samples(out)
    fp = json.loads((out / "realistic" / "model" / "samples.fingerprint.json").read_text())["fingerprint"]
    assert fp["system"]["stage"] == "stage2" and len(fp["system"]["checkpoint_sha256"]) == 64
    with pytest.raises(FingerprintMismatch) as e:
        run(_cfg(tiny_run, out, stage="stage1"))
    msg = str(e.value)
    assert "system.stage: 'stage2' (on disk) vs 'stage1' (now)" in msg and "system.checkpoint_sha256" in msg
    assert str(out / "realistic" / "model") in msg and str(out / "qa" / "token") in msg  # probes too
    assert str(out / "realistic" / "bm25") not in msg  # the baseline does not depend on the stage
    assert _model_samples(out) == stage2_samples  # nothing was touched
    ranked.clear()
    over = run(_cfg(tiny_run, out, stage="stage1", overwrite=True))
    assert len(ranked) == 12  # started over
    ref = run(_cfg(tiny_run, fresh, stage="stage1"))
    assert _model_samples(out) == _model_samples(fresh) != stage2_samples
    for a, b in zip(over["results"], ref["results"]):
        assert (a["benchmark"], a["system"], a["metrics"]) == (b["benchmark"], b["system"], b["metrics"])
    ranked.clear()
    again = run(_cfg(tiny_run, out, stage="stage1"))  # the same config again: resumes, ranks nothing
    assert ranked == [] and again["results"][0]["metrics"] == ref["results"][0]["metrics"]


def test_fingerprint_names_decoding_benchmark_and_changed_weights(tiny_run, tmp_path, monkeypatch):
    import shutil

    from toolsense.evaluation.fingerprint import FingerprintMismatch

    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run, run_dir)
    out = tmp_path / "out"
    cfg = _cfg(run_dir, out, baselines={})
    run(cfg)
    ranked = _counting(monkeypatch)
    with pytest.raises(FingerprintMismatch, match=r"decoding.beam_width: 10 \(on disk\) vs 8 \(now\)"):
        run({**cfg, "decoding": {**cfg["decoding"], "beam_width": 8}, "metrics": {**cfg.get("metrics", {}), "ks": [1, 5, 8]}})
    with pytest.raises(FingerprintMismatch, match=r"benchmark.style: 'short' \(on disk\) vs 'verbose' \(now\)"):
        run({**cfg, "benchmarks": {"realistic": {**cfg["benchmarks"]["realistic"], "style": "verbose"}}})
    # same stage name, other weights (a retrained run): only the checkpoint hash tells
    shutil.copy(run_dir / "stage1" / "model.safetensors", run_dir / "stage2" / "model.safetensors")
    with pytest.raises(FingerprintMismatch, match=r"system.checkpoint_sha256: '[0-9a-f]{64}' \(on disk\)") as e:
        run(cfg)
    assert "system.stage" not in str(e.value)
    # batch size and bootstrap settings cannot change a sample: a changed one still resumes
    shutil.copy(tiny_run / "stage2" / "model.safetensors", run_dir / "stage2" / "model.safetensors")
    run({**cfg, "decoding": {**cfg["decoding"], "batch_size": 3}, "metrics": {**cfg.get("metrics", {}), "resamples": 100}})
    assert ranked == []


def test_samples_without_fingerprint_are_refused(tiny_run, tmp_path):
    from toolsense.evaluation.fingerprint import FingerprintMismatch

    out = tmp_path / "old"
    (out / "realistic" / "model").mkdir(parents=True)
    (out / "realistic" / "model" / "samples.jsonl").write_text(json.dumps({"item_id": "x"}) + "\n")
    (out / "realistic" / "other.txt").write_text("kept")
    with pytest.raises(FingerprintMismatch, match="samples.jsonl without samples.fingerprint.json"):
        run(_cfg(tiny_run, out, baselines={}, benchmarks={"realistic": _cfg(tiny_run, out)["benchmarks"]["realistic"]}))
    run(_cfg(tiny_run, out, baselines={}, benchmarks={"realistic": _cfg(tiny_run, out)["benchmarks"]["realistic"]},
             overwrite=True))
    assert len(_model_samples(out).splitlines()) == 12 and (out / "realistic" / "other.txt").read_text() == "kept"


def test_released_benchmark_needs_its_path_and_samples_are_marked(tiny_run, tmp_path, shared_data):
    from toolsense.utils.compose import compose

    for name in ("rrb", "mcq", "qa"):
        cfg = compose("evaluate", overrides=[f"run={tiny_run}", f"benchmark={name}", f"output_dir={tmp_path / name}"])
        with pytest.raises(ValueError, match=rf"benchmark.path is required: point it at the released {name}.jsonl"):
            run(cfg)
    cfg = compose("evaluate", overrides=[f"run={tiny_run}", "benchmark=qa_sample", "device=cpu", "probe.modes=[token]",
                                         "decoding=beam10", "metrics.resamples=50", f"output_dir={tmp_path / 's'}"])
    summary = run(cfg)
    res = summary["results"][0]
    assert res["benchmark"] == "qa" and res["is_sample"] is True and res["n"] == 0  # no sample tool is a demo tool
    assert json.loads((tmp_path / "s" / "qa" / "token" / "results.json").read_text())["is_sample"] is True
    assert "| qa (sample) | token |" in (tmp_path / "s" / "table.md").read_text()
    from toolsense.comparison.compare import collect, comparison

    assert comparison(collect([tmp_path / "s"]), ["Rc@1"])["columns"] == ["qa (sample) token acc"]


def test_baselines_carry_fingerprints_too(tmp_path):
    from toolsense.evaluation.fingerprint import FingerprintMismatch

    out = tmp_path / "bl"
    cfg = {**_cfg(None, out, parametric=False, benchmarks={"realistic": _cfg(None, out)["benchmarks"]["realistic"]}),
           "run": None, "catalog": {"path": None}}
    first = run(cfg)["results"][0]
    assert first["system"] == "bm25" and first["fingerprint"]["system"]["baseline"]["kind"] == "bm25"
    with pytest.raises(FingerprintMismatch, match=r"realistic/bm25:\n(.*\n)?    decoding.top: 10 \(on disk\) vs 5 \(now\)"):
        run({**cfg, "decoding": {**cfg["decoding"], "beam_width": 5}, "metrics": {**cfg.get("metrics", {}), "ks": [1, 5]}})
    with pytest.raises(FingerprintMismatch, match=r"system.baseline.kind: 'bm25' \(on disk\) vs 'dense' \(now\)"):
        run({**cfg, "baselines": {"bm25": {"kind": "dense"}}})
    assert run(cfg)["results"][0]["metrics"] == first["metrics"]


def _bm25_cfg(out, limit=3):
    return {"parametric": False, "baselines": {"bm25": {"kind": "bm25"}}, "output_dir": str(out),
            "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": limit}},
            "decoding": {"beam_width": 3}, "metrics": {"ks": [1], "resamples": 10}}


def test_a_held_output_folder_is_refused_naming_the_holder_or_skipped(tmp_path, monkeypatch):
    import socket

    from toolsense.utils.errors import UserError
    from toolsense.utils.rundir import RunDir

    out = tmp_path / "out"
    with RunDir(out).claim(doing="evaluating") as held:  # flock is per open file: this process's own evaluation is refused too
        assert held
        with pytest.raises(UserError) as e:
            run(_bm25_cfg(out))
        assert f"another process is evaluating into this folder (pid {os.getpid()} on {socket.gethostname()}" in str(e.value)
        monkeypatch.setenv("TOOLSENSE_BUSY", "skip")
        assert run(_bm25_cfg(out)) == {"skipped": str(out)}
        assert sorted(p.name for p in out.iterdir()) == [".lock"]  # nothing was written
        monkeypatch.setenv("TOOLSENSE_BUSY", "sometimes")
        with pytest.raises(ValueError, match="TOOLSENSE_BUSY='sometimes'"):
            run(_bm25_cfg(out))
    monkeypatch.setenv("TOOLSENSE_BUSY", "fail")
    assert run(_bm25_cfg(out))["results"][0]["n"] == 3  # released: the folder is free again


def test_toolsense_busy_wait_blocks_until_the_holder_lets_go(tmp_path, monkeypatch, caplog):
    import logging
    import threading
    import time

    from toolsense.utils.rundir import RunDir

    out, release, holding = tmp_path / "out", threading.Event(), threading.Event()

    def hold():
        with RunDir(out).claim():
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(10)
    monkeypatch.setenv("TOOLSENSE_BUSY", "wait")
    done = {}
    worker = threading.Thread(target=lambda: done.update(run(_bm25_cfg(out))))
    with caplog.at_level(logging.WARNING):
        worker.start()
        time.sleep(1.5)
        assert not done and not (out / "results.json").exists()  # still waiting
        release.set()
        worker.join(60)
        holder.join()
    assert done["results"][0]["n"] == 3
    assert any(f"waiting for pid {os.getpid()}" in r.getMessage() for r in caplog.records)


def _demo_evaluate_cmd(out: Path) -> list[str]:
    """evaluate.py of tiny_random over the 54 demo realistic items into ``out`` (the one-writer tests)."""
    return [sys.executable, "evaluate.py", "model=tiny_random", "benchmark=demo_realistic", "decoding=beam10",
            "decoding.free_form=false", "metrics.resamples=20", "device=cpu", f"output_dir={out}"]


def _assert_each_demo_item_once(out: Path) -> None:
    ids = [json.loads(x)["item_id"] for x in (out / "realistic" / "model" / "samples.jsonl").read_text().splitlines()]
    assert len(ids) == 54 and len(set(ids)) == 54
    assert json.loads((out / "results.json").read_text())["results"][0]["n"] == 54


def test_evaluate_py_into_a_folder_another_process_holds_is_refused_then_runs(tmp_path):
    """Issue 21: two evaluations into one folder both ran to the end, and samples.jsonl held every item
    twice. A second process (here one holding the folder's lock, as a running evaluate.py does) must make
    evaluate.py stop naming it; once it is gone the same command runs, logging each item once.
    (Launching two evaluate.py at once raced: on a slow machine the first could finish before the second
    started, and both rightly exited 0 — see the test below.)"""
    import socket

    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HYDRA_FULL_ERROR": "1"}
    hold = ("import sys; from pathlib import Path; from toolsense.utils.rundir import holding\n"
            "with holding(Path(sys.argv[1])):\n    print('held', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(out)], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        cmd = _demo_evaluate_cmd(out)
        refused = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert refused.returncode != 0
        assert f"another process is evaluating into this folder (pid {holder.pid} on {socket.gethostname()}" \
            in refused.stderr, refused.stderr[-1500:]
        assert not (out / "results.json").exists() and not (out / "realistic").exists()
    finally:
        holder.communicate("", timeout=60)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-1500:]
    _assert_each_demo_item_once(out)


def test_two_evaluate_py_processes_started_at_once_log_each_item_once(tmp_path):
    """Issue 21, as users hit it: two launches at once. Whichever order the OS gives them — overlapping
    (one is refused, naming the other) or one after the other (the second finds the run finished) — each
    item is logged once and the results count 54."""
    import socket

    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HYDRA_FULL_ERROR": "1"}
    cmd = _demo_evaluate_cmd(out)
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert any(p.returncode == 0 for p in procs), [o[1][-1500:] for o in outs]
    for me, other in ((0, 1), (1, 0)):
        if procs[me].returncode != 0:  # refused: only ever because the other one held the folder
            assert (f"another process is evaluating into this folder (pid {procs[other].pid} on "
                    f"{socket.gethostname()}") in outs[me][1], outs[me][1][-1500:]
    _assert_each_demo_item_once(out)


def test_an_empty_catalog_is_named_by_evaluate_py(tmp_path):
    """Issue 21: evaluation died in an internal ``max()`` on a 0-byte catalog, naming no file."""
    empty, blank = tmp_path / "empty.jsonl", tmp_path / "blank.jsonl"
    empty.write_text("")
    blank.write_text("\n  \n\n")
    cmd = [sys.executable, "evaluate.py", "model=tiny_random", "benchmark.limit=2", "decoding=beam10", "device=cpu",
           f"catalog.path={empty}", f"output_dir={tmp_path / 'out'}"]
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1", "HYDRA_FULL_ERROR": "1"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and f"{empty}: the catalog holds no tools" in proc.stderr
    assert "max()" not in proc.stderr and not (tmp_path / "out" / "results.json").exists()
    from toolsense.utils.io import DataError

    with pytest.raises(DataError, match=rf"{blank}: the catalog holds no tools"):  # baselines load the catalog too
        run({**_bm25_cfg(tmp_path / "bl"), "catalog": {"path": str(blank)}})


def test_one_output_folder_holds_one_checkpoint_across_benchmarks(tiny_run, tmp_path):
    """Issue 38: the fingerprint was checked per ``<benchmark>/<system>`` folder only, so a retrained run
    evaluated on another benchmark into the same output_dir was accepted and compare.py built one row
    from two checkpoints. Now the second evaluation is refused naming both checkpoints; the same
    weights on another benchmark, and baselines, still join the folder."""
    import shutil

    from toolsense.evaluation.fingerprint import FingerprintMismatch, checkpoint_sha256

    run_dir, out = tmp_path / "run", tmp_path / "out"
    shutil.copytree(tiny_run, run_dir)
    bench = {"loader": "demo", "split": "test", "limit": 3}

    def one(label, style, **kw):
        return _cfg(run_dir, out, benchmarks={label: {**bench, "style": style}}, **kw)

    run(one("realistic", "short", baselines={}))
    first = checkpoint_sha256(run_dir / "stage2")
    shutil.copy(run_dir / "stage1" / "model.safetensors", run_dir / "stage2" / "model.safetensors")  # retrained
    second = checkpoint_sha256(run_dir / "stage2")
    with pytest.raises(FingerprintMismatch) as e:
        run(one("standard", "verbose", baselines={}))
    msg = str(e.value)
    assert f"{out} holds evaluations of another checkpoint ({out / 'realistic' / 'model'}: run run, stage stage2" in msg
    assert f"checkpoint_sha256 {first})" in msg and f"checkpoint_sha256 {second})" in msg
    assert not (out / "standard").exists()  # refused before anything was written
    shutil.copy(tiny_run / "stage2" / "model.safetensors", run_dir / "stage2" / "model.safetensors")  # the first weights
    summary = run(one("standard", "verbose"))  # the same checkpoint on another benchmark, with a baseline: accepted
    assert {(r["benchmark"], r["system"]) for r in summary["results"]} == {("standard", "tiny_random:stage2"), ("standard", "bm25")}


def test_batch_sizes_and_world_size_are_provenance_and_another_world_size_warns(tiny_run, tmp_path, caplog):
    """results.json records the batch size ``auto`` resolved to, its halvings and the world size; the
    fingerprint file lists the world sizes its samples were written on (not part of the fingerprint), and a
    resume on another world size warns, naming both."""
    import logging

    cfg = _cfg(tiny_run, tmp_path, benchmarks={"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 4}},
               baselines={}, decoding={"beam_width": 4, "batch_size": "auto"}, metrics={"ks": [1, 4], "resamples": 50})
    res = run(cfg)["results"][0]
    assert res["batching"] == {"world_size": 1, "batch_size": "auto", "resolved": 8, "halvings": 0, "final": 8}
    assert "batch_size" not in res["fingerprint"]["decoding"]
    fp_path = tmp_path / "realistic" / "model" / "samples.fingerprint.json"
    stored = json.loads(fp_path.read_text())
    assert stored["world_sizes"] == [1]
    fp_path.write_text(json.dumps({**stored, "world_sizes": [2]}))  # as a 2-process run would have left it
    with caplog.at_level(logging.WARNING, logger="toolsense.evaluation.fingerprint"):
        run(cfg)
    assert "resumed on world size 1; its samples so far were written on world size 2" in caplog.text
    assert json.loads(fp_path.read_text())["world_sizes"] == [2, 1]
    assert json.loads(fp_path.read_text())["fingerprint"] == stored["fingerprint"]


def test_a_stale_missing_gold_list_is_removed_when_nothing_is_missing(tmp_path):
    """Issue 49: ``missing_gold.txt`` of an earlier evaluation into the folder survived ``overwrite=true``
    against an index that holds every gold tool, describing another index."""
    from toolsense.catalog import Query
    from toolsense.evaluation.benchmarks import Benchmark, BenchmarkConfig
    from toolsense.evaluation.config import MetricsConfig
    from toolsense.evaluation.tasks import evaluate_ranking

    qs = [Query("q1", "a", ("S&&A", "S&&X")), Query("q2", "b", ("S&&B",))]
    bench = Benchmark("toy", "retrieval", qs, config=BenchmarkConfig(loader="query_jsonl"))
    rankings = {"q1": ["S&&A", "S&&B"], "q2": ["S&&B", "S&&A"]}
    metrics = MetricsConfig(ks=[1], resamples=20)
    evaluate_ranking(bench, "hand", _ranker(rankings), {"S&&A", "S&&B"}, metrics, tmp_path, {})
    assert (tmp_path / "missing_gold.txt").read_text().splitlines()[1:] == ["S&&X"]
    for f in tmp_path.iterdir():  # what overwrite=true clears: the samples and results
        if f.name != "missing_gold.txt":
            f.unlink()
    res = evaluate_ranking(bench, "hand", _ranker(rankings), {"S&&A", "S&&B", "S&&X"}, metrics, tmp_path, {})
    assert res["missing"]["count"] == 0 and not (tmp_path / "missing_gold.txt").exists()
