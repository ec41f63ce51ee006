"""Every script under benchmarks/ runs end to end with ``--smoke`` and prints its side-by-side numbers.

Each script runs as its own process, as a user runs it (``python benchmarks/<script>.py --smoke``,
tiny_random and a few items), with this checkout first on the path and ``TOOLSENSE_DATA`` set to the
shared data (skipped without it). The checks parse the lines the script prints (the ratios, the
tables) and pin what holds at any size: finite positive ratios, a ratio that agrees with the
numbers beside it, identical top-B lists against the reference search, peak RSS that never falls.
A script added to benchmarks/ without a smoke run here fails ``test_every_script_has_a_smoke_run``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
NOT_SMOKED = {"timing.py": "the helpers the scripts share (tested below)",
              "gpu_check.py": "needs a CUDA device; gpu_check.sh runs it (its --smoke: tests/test_gpu_check.py)",
              "gpu_wheels.py": "builds the GPU wheelhouse (make gpu-wheels); gpu_check.sh --smoke installs from one"}
SLOW = pytest.mark.slow
NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"


def _timing():
    spec = importlib.util.spec_from_file_location("benchmarks_timing", BENCH / "timing.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_smoke(script: str, data: Path, *extra: str) -> str:
    """stdout + stderr of ``python benchmarks/<script> --smoke *extra``; fails on a non-zero exit."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "TOOLSENSE_DATA": str(data), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "WANDB_MODE": "disabled"}
    cmd = [sys.executable, str(BENCH / script), "--smoke", *extra]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert _timing().SMOKE_NOTE in proc.stdout
    return proc.stdout + "\n" + proc.stderr


def numbers(pattern: str, text: str) -> list[float]:
    """The numeric groups of ``pattern``'s first match in ``text``, each checked finite."""
    m = re.search(pattern, text, re.M)
    assert m, f"no line matches {pattern!r} in:\n{text[-3000:]}"
    values = [float(g) for g in m.groups() if g is not None and re.fullmatch(NUM, g)]
    assert all(math.isfinite(v) for v in values), (pattern, values)
    return values


def ratio(pattern: str, text: str) -> list[float]:
    values = numbers(pattern, text)
    assert all(v > 0 for v in values), (pattern, values)
    return values


def check_constrained(out: str, index: str) -> None:
    assert re.search(rf"^queries=8 beam=8 index={index} tools=300$", out, re.M)
    ratio(rf"^ours/floor = {NUM}x \(medians {NUM}x\)", out)
    ratio(rf"^reference/ours = {NUM}x \(medians {NUM}x\)", out)
    same, n, same10, n10, ties, others = numbers(
        rf"^identical top-8 lists: {NUM}/{NUM}; identical top-10: {NUM}/{NUM}; the others differ only by near-ties "
        rf"\(scores within 1e-4\): {NUM}/{NUM}$", out)
    assert n == n10 == 4 and others == n - same
    assert same + ties == n, "ours and the HF-generate reference disagree beyond near-ties"
    if index == "flat":
        ratio(rf"FLOPs over the floor's: {NUM}x for an exact method .* {NUM}x for ours", out)
        vocab, piece, whole, sliced, gain, agree, n = numbers(
            rf"^peak memory of the constrained search of 4 queries x 8 beams after their prefill \(vocabulary {NUM}, "
            rf"slices of {NUM}\): whole vocabulary {NUM} MiB, "
            rf"vocabulary slices {NUM} MiB, ratio {NUM}x; identical rankings {NUM}/{NUM}$", out)
        assert piece == 256 < vocab and whole > sliced > 0 and gain == pytest.approx(whole / sliced, rel=0.02)
        assert agree == n == 4


def check_index_scale(out: str) -> None:
    vocab0, vocab1, nodes = numbers(rf"^model=tiny_random builder=flat tools=2000 new tokens=2001 vocab {NUM} -> {NUM} "
                                    rf"tied=(?:True|False) trie nodes={NUM}$", out)
    assert vocab1 - vocab0 == 2001  # the tools and <<Finish>>
    assert nodes == 1 + 2 * 2000  # root, then one token node and its EOS leaf per tool
    rss = []
    for phase in ("load model", "load token list", "build flat index", "add tokens \\+ resize \\+ init", "build trie"):
        seconds, mib = numbers(rf"^{phase}\s+{NUM}\s+{NUM}$", out)
        assert seconds >= 0 and mib > 0
        rss.append(mib)
    assert rss == sorted(rss), f"peak RSS fell between phases: {rss}"


def check_encode_catalog(out: str) -> None:
    n_catalog, n_queries = numbers(rf"^32 tools of {NUM} \(toolenv2404\.jsonl\.gz\), batch 32, {NUM} G1 queries", out)
    assert n_catalog > 40_000 and n_queries > 0
    for backend in ("torch", "int8"):
        lo, med, rate_lo, rate_med, recall = numbers(rf"^{backend}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}$", out)
        assert rate_lo > 0 and rate_med > 0 and 0 <= recall <= 1
    speed, _, cos_mean, cos_min = numbers(
        rf"^int8 vs torch: {NUM}x the speed \(medians\), recall@10 {NUM}, cosine to torch mean {NUM} min {NUM}$", out)
    assert speed > 0 and 0.9 < cos_mean <= 1.0001 and cos_min <= cos_mean  # int8 stays close to fp32 MiniLM
    first, again, faster = numbers(rf"^cache \(torch\): first call .* {NUM} s, "
                                   rf"second call \(memory-mapped load\) {NUM} s = {NUM}x faster", out)
    assert first > 0 and again >= 0 and faster > 1


def check_pool_search(out: str) -> None:
    n, anchors = numbers(rf"^catalog: {NUM} tools; anchors: {NUM}; pool = anchor \+ 13 nearest$", out)
    assert n > 40_000 and anchors == 50
    texts, lo, med, rate = numbers(rf"^encoding {NUM} texts: min {NUM} s, median {NUM} s \({NUM} texts/s at best\)$", out)
    assert texts == 16 and 0 < lo <= med and rate > 0
    (full,) = ratio(rf"^encoding the whole catalog \(extrapolated from that rate\): {NUM} s$", out)
    assert full == pytest.approx(n / rate, rel=0.05, abs=1)  # rate is printed to 0.1
    (share,) = ratio(rf"^pool search / encoding = {NUM} \(goal <= 0\.10\)$", out)
    assert share < 1


def check_train_throughput(out: str) -> None:
    best = {}
    for side in (r"baseline \(padded to longest\)", r"ours \(auto\)"):
        best[side], median, _, rss = numbers(rf"^  {side}\s+best\s+{NUM}\s+median\s+{NUM}\s+spread\s+{NUM}%\s+peak RSS {NUM} MiB$", out)
        assert best[side] > 0 and median > 0 and rss > 0
    on_best, on_medians = ratio(rf"^throughput ratio ours/baseline = {NUM}x on the best runs, {NUM}x on the medians", out)
    assert on_best == pytest.approx(best[r"ours \(auto\)"] / best[r"baseline \(padded to longest\)"], abs=0.01)
    assert on_best == on_medians  # one run per mode


def check_precision(out: str) -> None:
    assert "(autocast bf16 on: True)" in out
    ratio(rf"^  bf16/fp32 tokens/wall-s: {NUM}x on the minima, {NUM}x on the medians$", out)
    ratio(rf"^  bf16/fp32 tokens/CPU-s: {NUM}x on the minima, {NUM}x on the medians$", out)
    agree, positions = numbers(rf"top-1 agreement {NUM}% of {NUM} real positions", out)
    assert positions > 0 and 90 <= agree <= 100  # bf16 autocast barely moves the tiny model's argmax


def check_eval_rerun(out: str) -> None:
    (cold,) = ratio(rf"^cold \(empty embedding cache\): {NUM} s$", out)
    lo, med = ratio(rf"^warm \(cached embeddings\), 1 runs: min {NUM} s, median {NUM} s$", out)
    (warm_cold,) = ratio(rf"^warm/cold = {NUM} \(goal < 0\.10: (?:met|NOT met)\)$", out)
    assert warm_cold == pytest.approx(med / cold, rel=0.02, abs=1e-3)
    assert re.search(r"embeddings of 126 tools from cache", out), "the warm run did not read the cold run's embeddings"


def check_verbose_vs_toolbench(out: str) -> None:
    n_tools, n_gold, _, n_g1 = numbers(rf"^catalog: {NUM} tools \({NUM} G1 gold, {NUM} distractors\); {NUM} G1 queries", out)
    assert n_tools == 150 and 0 < n_gold <= n_tools and n_g1 == 40
    rows = {}
    for label in ("ToolBench G1 \\(real\\)", "generated v2 \\(shipped\\)", "generated v3 \\(calibrated to the catalog\\)",
                  "always named, whole clause \\(v1 style\\)"):
        n, api, svc, *hits = numbers(rf"^{label}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}$", out)
        assert hits[:3] == sorted(hits[:3]) and all(0 <= h <= 100 for h in hits)  # any-hit grows with k
        rows[" ".join(label.split(" ")[:2])] = (n, api, svc, hits)
    assert rows["always named,"][1] == rows["always named,"][2] == 100.0 and rows["generated v2"][1] < 60  # v2 names far less
    assert rows["generated v3"][1] < rows["generated v2"][1] and rows["generated v3"][2] <= rows["generated v2"][2]
    assert rows["generated v2"][0] == rows["generated v3"][0] == n_gold  # one held-out query per gold tool
    ratio(rf"^ratio to G1, BM25 any@5: generated v2 {NUM}; v3 {NUM}; always named {NUM}$", out)


def check_significance(out: str) -> None:
    n_tests, n_items, resamples = numbers(rf"^{NUM} tests x {NUM} items, {NUM} resamples each", out)
    assert (n_tests, n_items, resamples) == (4, 40, 1000)
    on_min, on_median = ratio(rf"^speed-up ours/scipy = {NUM}x on the minima, {NUM}x on the medians$", out)
    assert on_min > 0 and on_median > 0
    assert re.search(rf"^largest \|p ours - p scipy\| = {NUM} \(Monte Carlo bound {NUM}: within\)$", out, re.M)


SMOKES = [
    pytest.param("significance.py", (), check_significance, id="significance"),
    pytest.param("verbose_vs_toolbench.py", (), check_verbose_vs_toolbench, id="verbose_vs_toolbench"),
    pytest.param("constrained_decoding.py", (), lambda out: check_constrained(out, "flat"), id="constrained_decoding-flat"),
    pytest.param("constrained_decoding.py", ("--index", "structural"), lambda out: check_constrained(out, "structural"),
                 id="constrained_decoding-structural"),
    pytest.param("index_scale.py", (), check_index_scale, id="index_scale"),
    pytest.param("encode_catalog.py", (), check_encode_catalog, id="encode_catalog"),
    pytest.param("pool_search.py", (), check_pool_search, id="pool_search"),
    # Slow: each runs two or three fresh processes that import transformers + TRL (or evaluate.py
    # with Hydra) and build a Trainer or an evaluation, 20-40 s apiece on 2 loaded cores whatever
    # the model size; measured 50 s (train_throughput), 2 min (precision), 70 s (eval_rerun).
    pytest.param("train_throughput.py", (), check_train_throughput, id="train_throughput", marks=SLOW),
    pytest.param("precision.py", (), check_precision, id="precision", marks=SLOW),
    pytest.param("eval_rerun.py", (), check_eval_rerun, id="eval_rerun", marks=SLOW),
]


def test_every_script_has_a_smoke_run():
    scripts = {p.name for p in BENCH.glob("*.py")} - set(NOT_SMOKED)
    smoked = {p.values[0] for p in SMOKES}
    assert scripts == smoked, f"benchmarks/ without a smoke run here: {sorted(scripts - smoked)}"


def test_smoke_defaults_give_way_to_explicit_arguments():
    import argparse

    timing = _timing()

    def parser() -> argparse.ArgumentParser:
        ap = argparse.ArgumentParser(prog="bench")
        ap.add_argument("--model", default="smollm2_135m")
        ap.add_argument("--repeats", type=int, default=3)
        return ap

    smoke = {"model": "tiny_random", "repeats": 1}
    assert vars(timing.parse_args(parser(), smoke, [])) == {"model": "smollm2_135m", "repeats": 3, "smoke": False}
    assert vars(timing.parse_args(parser(), smoke, ["--smoke"])) == {"model": "tiny_random", "repeats": 1, "smoke": True}
    assert vars(timing.parse_args(parser(), smoke, ["--smoke", "--repeats", "2"]))["repeats"] == 2
    with pytest.raises(ValueError, match=r"smoke defaults name no argument of bench: \['steps'\]"):
        timing.parse_args(parser(), {"steps": 2}, ["--smoke"])


def test_precision_trains_the_study_grids_first_job(monkeypatch):
    """precision.py's overrides compose to study=tools' first grid job (the grid is a sweep:
    ``trainer.seed=0,1``, ``experiment=tg,tg_h``), with the benchmark's model, precision and steps."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from toolsense.training.config import register_configs, to_train_config
    from toolsense.utils.compose import conf_dir

    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("benchmarks_precision", BENCH / "precision.py")
    precision = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(precision)
    overrides = precision.study_overrides("tiny_random", "bf16", 2)
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = to_train_config(compose("train", overrides=overrides))
    GlobalHydra.instance().clear()
    assert (cfg.trainer.seed, cfg.trainer.effective_batch, cfg.trainer.per_device_batch, cfg.trainer.max_length) == (0, 16, 8, 192)
    assert str(cfg.trainer.precision) == "bf16" and cfg.stage1.max_steps == 2 and not cfg.stage2.enabled
    assert cfg.catalog.build == "study_tools" and cfg.experiment == "tg"
    assert cfg.tuning.embedding_lr_scale == 2.5 and cfg.model.name_or_path == "tiny_random"


@pytest.mark.parametrize("script,extra,check", SMOKES)
def test_smoke(script: str, extra: tuple[str, ...], check: Callable[[str], None], shared_data):
    check(run_smoke(script, shared_data, *extra))
