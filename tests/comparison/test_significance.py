"""Paired permutation tests and Holm's correction on hand-computed cases, and their markers in a
real comparison table (compare.py over hand-written results)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolsense.comparison.compare import CompareConfig, run_compare
from toolsense.comparison.significance import holm, marker, paired_permutation, table_significance


def test_exact_paired_permutation_p_values():
    # 5 items, all differences +1: of the 2^5 sign flips only all-plus and all-minus reach |mean| 1
    assert paired_permutation([1] * 5, [0] * 5) == pytest.approx(2 / 32)
    # differences (+1, +1, -1, 0): |mean| >= 1/4 for every flip but those summing to +-1 ... enumerate by hand
    d = [1, 1, -1, 0]
    flips = [[s1 * d[0], s2 * d[1], s3 * d[2], s4 * d[3]] for s1 in (1, -1) for s2 in (1, -1) for s3 in (1, -1) for s4 in (1, -1)]
    expected = sum(abs(sum(f)) >= 1 for f in flips) / 16
    assert paired_permutation([1, 1, 0, 1], [0, 0, 1, 1]) == pytest.approx(expected)
    assert paired_permutation([0.3, 0.2], [0.3, 0.2]) == 1.0


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # 2 x 0.8 capped at 1, and monotone


def _result(root: Path, system: str, hits: list[int]) -> Path:
    """A baseline-like retrieval result on 12 items with these hit@1 values (and samples)."""
    d = root / "bench" / system
    d.mkdir(parents=True)
    n = len(hits)
    (d / "samples.jsonl").write_text("".join(json.dumps({
        "item_id": f"q{i}", "query": f"query {i}", "gold": ["A&&b"], "tier": "1-tool", "constrained": [], "free": None,
        "metrics": {"c_hit@1": float(h), "c_recall@1": float(h), "c_ndcg@1": float(h)}}) + "\n" for i, h in enumerate(hits)))
    mean = sum(hits) / n
    (d / "results.json").write_text(json.dumps({
        "benchmark": "bench", "system": system, "kind": "retrieval", "n": n, "source": {"baseline": {"kind": system}},
        "metrics": {"Rc@1": {"value": mean, "lo": mean, "hi": mean}}, "missing": {"count": 0}}))
    return d


def test_markers_in_a_comparison_table(tmp_path):
    _result(tmp_path, "strong", [1] * 12)
    _result(tmp_path, "weak", [0] * 12)
    _result(tmp_path, "same", [1] * 12)
    comp = run_compare(CompareConfig(roots=[str(tmp_path)], metrics=["Rc@1"], resamples=5000, plots=False), tmp_path / "out")
    sig = comp["statistics"]["significance"]
    letters = sig["letters"]
    assert set(letters) == {"strong", "weak", "same"}
    tests = {(t["a"], t["b"]): t for t in sig["tests"]}
    assert len(tests) == 3
    # 12 items, all differences 1: exact p = 2 / 2^12, Holm x3 (smallest), x2 (next); identical rows: p = 1
    pair = tests.get(("same", "strong")) or tests[("strong", "same")]
    assert pair["p"] == 1.0 and not pair["significant"]
    ps = sorted(t["p_holm"] for t in sig["tests"] if t["p"] < 1)
    assert ps == pytest.approx([3 * 2 / 4096, 3 * 2 / 4096])
    weak = letters["weak"]
    assert sig["markers"] == {"strong": {"bench Rc@1": weak}, "same": {"bench Rc@1": weak}}
    assert marker(sig, "strong", "bench Rc@1").strip() in ("ᵃ", "ᵇ", "ᶜ")
    table = (tmp_path / "out" / "comparison.md").read_text()
    assert table.count(marker(sig, "strong", "bench Rc@1").strip()) >= 2 and "Holm" in table
    assert (tmp_path / "out" / "report.html").is_file()


def test_no_test_without_per_item_values(tmp_path):
    entries = {("x", "c"): [({"value": 1}, {"_path": str(tmp_path / "none" / "results.json")})],
               ("y", "c"): [({"value": 0}, {"_path": str(tmp_path / "none2" / "results.json")})]}
    sig = table_significance(entries, {"c": "Rc@1"}, ["x", "y"])
    assert sig["tests"] == [] and sig["markers"] == {}
    assert table_significance(entries, {"c": "IS@1"}, ["x", "y"])["tests"] == []


def test_a_large_table_can_still_reach_holms_threshold():
    """Hits differ on 20 items, all one way: the exact p is 2 / 2^20 at any n (binomial over the
    discordant items), not the Monte Carlo floor 1/(R+1); and a table of m tests draws enough
    resamples that 1/(R+1) is a tenth of alpha/m (with 1,000 and 226 tests nothing could pass Holm)."""
    from toolsense.comparison.significance import monte_carlo_resamples

    x, y = [1] * 20 + [0] * 223, [0] * 20 + [0] * 223
    assert paired_permutation(x, y, resamples=1000) == pytest.approx(2 / 2**20)
    assert paired_permutation([1, 0, 1], [0, 1, 1]) == pytest.approx(1.0)
    r = monte_carlo_resamples(226)
    assert r == 45200 and 226 / (r + 1) < 0.05 / 10 and monte_carlo_resamples(3) == 1000
    rng = __import__("numpy").random.default_rng(0)  # graded values (recall, NDCG): Monte Carlo, floor 1/(r+1)
    a = rng.uniform(0.5, 1.0, 200)
    p = paired_permutation(a, a - rng.uniform(0.1, 0.2, 200), resamples=r)
    assert p <= 2 / (r + 1) and holm([p] * 226)[0] < 0.05  # scipy doubles the one-sided floor


def test_sign_flips_are_scipys_paired_permutation_test():
    """sign_flip_p is scipy's samples-paired permutation test: equal where both enumerate every flip,
    within Monte Carlo error where both draw."""
    import numpy as np
    from scipy.stats import permutation_test

    from toolsense.comparison.significance import sign_flip_p

    def scipy_p(d, r):
        res = permutation_test((d, np.zeros_like(d)), lambda a, b, axis: np.mean(a - b, axis=axis), n_resamples=r,
                               permutation_type="samples", vectorized=True, alternative="two-sided", random_state=0)
        return res.pvalue

    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1.0, 12)
    assert sign_flip_p(d, 5000) == pytest.approx(scipy_p(d, 5000), abs=1e-12)  # 4,096 flips: both exact
    d = rng.normal(0.15, 1.0, 200)
    p, q = sign_flip_p(d, 20000, seed=1), scipy_p(d, 20000)
    # ours draws P(|T| >= |t|), scipy doubles the smaller one-sided share: their Monte Carlo variances add
    assert 0.001 < q < 0.5 and abs(p - q) < 4 * ((q * (1 - q) + 4 * (q / 2) * (1 - q / 2)) / 20000) ** 0.5
    assert sign_flip_p(np.zeros(30) + 1e-3, 1000) == pytest.approx(1 / 1001)  # every flip but none reaches it
