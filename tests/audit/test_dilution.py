"""Dilution protocol pieces on constructed traces with hand-computed answers: the append order,
the synthetic pool's leak rule, and character length matching."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from toolsense.audit.dilution import (
    DilutionConfig,
    diluted_texts,
    match_chars,
    resolve_real_order,
    run_dilution,
    select_pool,
    target_lengths,
)
from toolsense.audit.pt2d import PT2DConfig
from toolsense.audit.traces import ToolResult, TraceRecord, TraceSet

TOOLS = ["t1", "t2", "t3", "t4", "t5"]
STATS = SimpleNamespace(n_boot=200, level=0.95, seed=0)


def _traces(n: int = 80) -> TraceSet:
    """t3 (the probe) and t5 carry the label ("alpha"/"omega"); t1, t2, t4 hold the same text in
    every record, so their own AUROC is exactly 0.5; their words mark the tool ("pa", "qa", "ra")."""
    recs = []
    for i in range(n):
        y = i % 2
        word = "alpha" if y else "omega"
        texts = {"t1": "pa pa", "t2": "qa qaqa", "t3": f"probe {word}", "t4": "ra ra ra", "t5": f"leak {word} {word}"}
        recs.append(TraceRecord(f"r{i}", y, "0" if i < n // 2 else "1", tuple(ToolResult(t, texts[t]) for t in TOOLS)))
    return TraceSet(recs, list(TOOLS), "mem")


def test_real_order_auto_is_probe_then_trace_order():
    assert resolve_real_order("auto", "t3", TOOLS, ["t3", "t5", "t1", "t2", "t4"]) == ["t3", "t1", "t2", "t4", "t5"]
    assert resolve_real_order("ranking", "t3", TOOLS, ["t5", "t3", "t1", "t2", "t4"]) == ["t3", "t5", "t1", "t2", "t4"]
    assert resolve_real_order([3, 1, 2, 4, 5], "t3", TOOLS, []) == ["t3", "t1", "t2", "t4", "t5"]
    assert resolve_real_order(["t5", 1], "t3", TOOLS, []) == ["t5", "t1"]
    with pytest.raises(ValueError, match=r"dilution.real_order: position 6 is past the 5 tools"):
        resolve_real_order([3, 6], "t3", TOOLS, [])
    with pytest.raises(ValueError, match="dilution.real_order repeats a tool"):
        resolve_real_order([3, "t3"], "t3", TOOLS, [])
    with pytest.raises(ValueError, match="dilution.real_order must be one of"):
        DilutionConfig(real_order="paper")


def test_real_sweep_appends_sections_in_the_configured_order(tmp_path):
    ts = _traces()
    fit, ev = ts.split(["0"], None)
    res = run_dilution(ts, fit, ev, DilutionConfig(tool="t3", ks=[0], seeds=[0]), PT2DConfig(), TOOLS, STATS, tmp_path / "d.jsonl")
    assert [r["tools"] for r in res["real"]] == [["t3"], ["t3", "t1"], ["t3", "t1", "t2"], ["t3", "t1", "t2", "t4"],
                                                 TOOLS[2:3] + ["t1", "t2", "t4", "t5"]]
    assert res["real_order"]["setting"] == "auto" and "trace order" in res["real_order"]["rule"]
    # a changed order never reuses the stored rows of another
    res2 = run_dilution(ts, fit, ev, DilutionConfig(tool="t3", real_order=[3, 5], ks=[0], seeds=[0]), PT2DConfig(), TOOLS,
                        STATS, tmp_path / "d.jsonl")
    assert [r["tools"] for r in res2["real"]] == [["t3"], ["t3", "t5"]]


def test_pool_rule_on_hand_made_aurocs():
    aur = {"t1": {"auroc": 0.50, "lo": 0.40, "hi": 0.60},   # chance: in
           "t2": {"auroc": 0.62, "lo": 0.45, "hi": 0.78},   # CI holds 0.5 but gap 0.12 > 0.1: out
           "t4": {"auroc": 0.45, "lo": 0.30, "hi": 0.52},   # gap 0.05, CI holds 0.5: in
           "t5": {"auroc": 0.90, "lo": 0.80, "hi": 0.97}}   # leaky: out
    pool = select_pool(DilutionConfig(), "t3", TOOLS, aur)
    assert pool["tools"] == ["t1", "t4"] and sorted(pool["excluded"]) == ["t2", "t5"]
    assert "0.620 [0.450, 0.780]" in pool["excluded"]["t2"]
    assert select_pool(DilutionConfig(pool_max_gap=0.15), "t3", TOOLS, aur)["tools"] == ["t1", "t2", "t4"]
    assert select_pool(DilutionConfig(synthetic_pool="all_other"), "t3", TOOLS, {})["tools"] == ["t1", "t2", "t4", "t5"]
    with pytest.raises(ValueError, match="no tool other than 't3' is near chance"):
        select_pool(DilutionConfig(), "t3", TOOLS, {t: aur["t5"] for t in TOOLS})


def test_synthetic_pool_excludes_the_leaky_tool(tmp_path):
    """t5 repeats the label word: its own AUROC is 1, so its text never enters a synthetic section."""
    ts = _traces()
    fit, ev = ts.split(["0"], None)
    res = run_dilution(ts, fit, ev, DilutionConfig(tool="t3", ks=[0, 5], seeds=[0, 1]), PT2DConfig(), TOOLS, STATS,
                       tmp_path / "d.jsonl")
    assert res["synthetic_pool"]["tools"] == ["t1", "t2", "t4"] and list(res["synthetic_pool"]["excluded"]) == ["t5"]
    texts = diluted_texts(ts, "t3", 5, np.random.default_rng(0), res["synthetic_pool"]["tools"],
                          target_lengths(ts, "t3", "probe"))
    assert not any("leak" in t for t in texts) and all(t.count("\n") == 5 for t in texts)
    # every inserted section came from t1, t2 or t4: its first letters mark it
    assert all(p.startswith(("probe", "pa", "qa", "ra")) for t in texts for p in t.split("\n"))
    rows = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert {r["sweep"] for r in rows} == {"real", "synthetic"}


def test_length_matching_in_characters():
    assert match_chars("abc", 7) == "abc abc" and match_chars("ab", 6) == "ab ab " and match_chars("abcdef", 4) == "abcd"
    assert match_chars("abc", 0) == ""
    ts = _traces(4)
    # probe sections are "probe omega" / "probe alpha": 11 characters each
    assert target_lengths(ts, "t3", "probe").tolist() == [11] * 4
    # mean over all sections: (5 + 7 + 11 + 8 + 16) / 5 = 9.4 -> 9
    assert target_lengths(ts, "t3", "mean").tolist() == [9] * 4
    assert target_lengths(ts, "t3", 1846).tolist() == [1846] * 4
    texts = diluted_texts(ts, "t3", 3, np.random.default_rng(1), ["t1", "t2", "t4"], target_lengths(ts, "t3", 1846))
    for t in texts:
        parts = t.split("\n")
        assert sorted(len(p) for p in parts) == [11, 1846, 1846, 1846]
    with pytest.raises(ValueError, match="dilution.length_match must be probe, mean or a character count"):
        DilutionConfig(length_match="words")
