"""Is one system better than another on the same items? Paired permutation tests per table column,
Holm-corrected across the whole comparison table, shown as markers beside the intervals.

Every row of a comparison gets a letter (a, b, c, … in row order). For each column and each pair
of rows evaluated on common items, the per-item values (runs.item_values: 0/1 hits, recall, NDCG,
probe correctness; a row with several seeds or runs gives each item the mean over them, so the
unit resampled is the item) are compared by a two-sided paired permutation test of the mean
difference (:func:`sign_flip_p`, the test of scipy's ``permutation_test`` with ``permutation_type="samples"``:
each item's two values swapped or not; exact when 2^n is at most the resamples, and exact at any n by the binomial
over the discordant items when every difference is 0 or +-c, as for hits). A Monte Carlo p-value
cannot fall below 1/(R+1), so R grows with the number of tests (monte_carlo_resamples) and a large
table can still reach Holm's thresholds. All p-values of the table are
Holm-corrected together (family-wise error 5%). A cell's marker lists the letters of the rows it
is significantly *better* than (ranx's convention): ``Rc@1 60.3 [..] ᵃᶜ``. IS@k is a ratio of
means (a registered ratio), not a per-item mean, so its columns are not tested; nor are drift columns.
"""

from __future__ import annotations

import string
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np

from toolsense.metrics.registry import METRICS

ALPHA = 0.05
SUPERSCRIPT = str.maketrans(string.ascii_lowercase, "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖqʳˢᵗᵘᵛʷˣʸᶻ")


def paired_permutation(x: Sequence[float], y: Sequence[float], resamples: int = 10000, seed: int = 0) -> float:
    """Two-sided p-value of mean(x - y) = 0 for paired values, by permuting within pairs.
    Identical samples give 1.0 (no evidence of a difference)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) != len(y):
        raise ValueError(f"paired test: {len(x)} values against {len(y)}")
    if len(x) == 0 or np.array_equal(x, y):
        return 1.0
    d = x - y
    nonzero = d[d != 0]
    if np.allclose(np.abs(nonzero), abs(nonzero[0])):
        # every difference is +-c (hits, 0/1 correctness): the sign-flip distribution of the mean is a binomial
        # over the discordant items, so its p-value is exact at any n (McNemar's exact test), with no resolution floor
        from scipy.stats import binomtest

        return float(binomtest(int((nonzero > 0).sum()), len(nonzero), 0.5).pvalue)
    return sign_flip_p(d, resamples, seed)


def sign_flip_p(d: np.ndarray, resamples: int, seed: int = 0) -> float:
    """Two-sided p of mean(d) = 0 by flipping the signs of the paired differences ``d``: exact over all
    2^n flips where that is at most ``resamples``, else Monte Carlo, (hits + 1) / (resamples + 1).

    numpy sign matrices times ``d`` in chunks of ~4M entries: scipy's ``permutation_test`` (samples
    pairing) argsorts a random matrix per batch, and a study table's Holm correction asks for R = 200
    x (its tests) resamples of each of its tests, so the table's cost grew with the square of its size
    (a 20-minute ``compare`` of study=cpu's grid)."""
    n = len(d)
    observed = abs(float(d.mean())) * (1 - 1e-12)  # ties with the observed statistic count as extreme
    if n <= 20 and 2**n <= resamples:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        return float(np.mean(np.abs(signs @ d) / n >= observed))
    rng = np.random.default_rng(seed)
    chunk = max(1, min(resamples, (1 << 22) // n))
    hits, done = 0, 0
    while done < resamples:
        r = min(chunk, resamples - done)
        signs = rng.integers(0, 2, size=(r, n), dtype=np.int8).astype(np.float64) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ d) / n >= observed))
        done += r
    return (hits + 1) / (resamples + 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given): the i-th smallest is multiplied
    by (m - i), then made monotone and capped at 1."""
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adj = np.empty(m)
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        adj[j] = running
    return adj.tolist()


def row_items(ents: Sequence[tuple[Any, dict]], metric: str) -> dict[str, float] | None:
    """One row's per-item values in one column: the mean over its results (seeds, runs) of
    runs.item_values, over the items every result has; None without per-item values."""
    from toolsense.comparison.runs import item_values

    # only results that have the metric (a baseline has no free-form hits: no Rf@k / IS@k to read)
    per = [item_values(res["_path"], metric) for est, res in ents if res.get("_path") and est and est.get("value") is not None]
    if not per or any(v is None for v in per):
        return None
    common = set(per[0]).intersection(*per[1:])
    return {i: float(np.mean([v[i] for v in per])) for i in sorted(common)}


def monte_carlo_resamples(m: int, alpha: float = ALPHA, floor: int = 1000) -> int:
    """Resamples of a Monte Carlo permutation p-value in a table of ``m`` tests: enough that the
    smallest attainable p, 1/(R+1), is a tenth of Holm's first threshold alpha/m (else no test of a
    large table could ever be significant: 1,000 resamples and 226 tests give at best 0.23)."""
    return max(int(floor), int(np.ceil(10 * max(m, 1) / alpha)))


def testable(metric: str | None) -> bool:
    """A column with per-item values to pair: not a ratio of means (IS@k; metrics/registry.py), not drift."""
    return metric is not None and not METRICS.is_ratio(metric)


def table_significance(entries: Mapping[tuple[str, str], Sequence[tuple[Any, dict]]], col_metric: Mapping[str, str | None],
                       rows: Sequence[str], resamples: int = 10000, seed: int = 0, alpha: float = ALPHA) -> dict[str, Any]:
    """Every pairwise test of the table (``entries``: (row, column) -> [(estimate, result)] as
    compare.comparison gathers them), Holm-corrected together. Returns ``{letters: {row: a},
    markers: {row: {column: "ᵃᶜ"}}, tests: [{column, a, b, n, diff, p, p_holm, significant}],
    alpha, method}``; ``diff`` = mean(a - b) over the common items."""
    letters = {r: string.ascii_lowercase[i] if i < 26 else f"[{i}]" for i, r in enumerate(rows)}
    values = {(r, c): row_items(ents, col_metric[c]) for (r, c), ents in entries.items() if testable(col_metric.get(c))}
    tests, pairs = [], []
    for col in dict.fromkeys(c for _, c in values):
        for a, b in combinations([r for r in rows if values.get((r, col))], 2):
            va, vb = values[(a, col)], values[(b, col)]
            common = sorted(set(va) & set(vb))
            if len(common) < 2:
                continue
            x, y = [va[i] for i in common], [vb[i] for i in common]
            tests.append({"column": col, "a": a, "b": b, "n": len(common), "diff": float(np.mean(np.subtract(x, y)))})
            pairs.append((x, y))
    # a Monte Carlo p-value is at least 1/(R+1): with m tests Holm needs p < alpha/m, so R grows with the table
    resamples = monte_carlo_resamples(len(tests), alpha, resamples)
    for t, (x, y) in zip(tests, pairs):
        t["p"] = paired_permutation(x, y, resamples, seed)
    for t, p in zip(tests, holm([t["p"] for t in tests])):
        t["p_holm"], t["significant"] = p, p < alpha
    markers: dict[str, dict[str, str]] = {}
    for t in tests:
        if t["significant"] and t["diff"] != 0:
            better, worse = (t["a"], t["b"]) if t["diff"] > 0 else (t["b"], t["a"])
            cell = markers.setdefault(better, {})
            cell[t["column"]] = "".join(sorted(cell.get(t["column"], "") + letters[worse]))
    return {"letters": letters, "markers": markers, "tests": tests, "alpha": alpha, "resamples": resamples,
            "method": "paired permutation test of the per-item mean difference (exact binomial on 0/1 values, else sign "
                      f"flips: all of them up to 2^20, else {resamples} drawn), Holm-corrected across the table"}


def marker(sig: Mapping[str, Any] | None, row: str, col: str) -> str:
    """`` ᵃᶜ`` for a cell significantly better than rows a and c, else ''."""
    m = ((sig or {}).get("markers") or {}).get(row, {}).get(col, "")
    return f" {m.translate(SUPERSCRIPT)}" if m else ""


def legend(sig: Mapping[str, Any] | None) -> str:
    if not sig or not sig.get("tests"):
        return ""
    rows = ", ".join(f"{v} = {k}" for k, v in sig["letters"].items())
    n_sig = sum(t["significant"] for t in sig["tests"])
    return (f"\nSignificance: a superscript names the rows a cell is better than ({rows}); {sig['method']}, "
            f"family-wise α = {sig['alpha']}, {n_sig} of {len(sig['tests'])} paired tests significant.\n")
