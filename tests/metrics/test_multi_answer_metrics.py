"""COMP@k and R-precision against trec_eval (pytrec_eval) on hand-made rankings with several gold
tools, invalid (None) outputs and repeats, plus their aggregates and per-tier breakdown."""

from __future__ import annotations

import pytest

from toolsense.metrics.aggregate import aggregate, item_metrics
from toolsense.metrics.ranking import complete_at, r_precision
from toolsense.reporting.export import run_lines

pytrec_eval = pytest.importorskip("pytrec_eval")

CASES = {  # qid: (ranking, gold)
    "one": (["a", "b", "c", "d"], ["b"]),
    "two": (["a", None, "b", "c"], ["a", "c"]),           # an invalid output keeps its rank slot
    "four": (["x", "a", "a", "b", "c", "d", None], ["a", "b", "c", "d"]),  # a repeat finds "a" once
    "none": ([None, None, "z"], ["a", "b"]),
    "short": (["b"], ["a", "b", "c"]),                     # a ranking shorter than |gold|
}
KS = (1, 2, 3, 5, 7)


def _trec(qid: str, ranking, gold):
    """trec_eval's per-query Rprec and recall_k for one ranking, written as export.py writes runs."""
    run = {}
    for line in run_lines(qid, ranking, "t"):
        _, _, doc, _, score, _ = line.split()
        run[doc] = float(score)
    ev = pytrec_eval.RelevanceEvaluator({qid: {g: 1 for g in gold}}, {"Rprec", "recall." + ",".join(map(str, KS))})
    return ev.evaluate({qid: run})[qid]


@pytest.mark.parametrize("qid", sorted(CASES))
def test_rprec_and_comp_equal_trec_eval(qid):
    ranking, gold = CASES[qid]
    got = _trec(qid, ranking, gold)
    assert r_precision(ranking, gold) == pytest.approx(got["Rprec"], abs=1e-12)
    for k in KS:  # COMP@k is "recall@k is complete"
        assert complete_at(ranking, gold, k) == float(got[f"recall_{k}"] == 1.0)


def test_hand_values():
    assert r_precision(["x", "a", "a", "b", "c", "d", None], ["a", "b", "c", "d"]) == 0.5  # a, b in the top 4
    assert complete_at(["x", "a", "a", "b", "c", "d", None], ["a", "b", "c", "d"], 6) == 1.0
    assert complete_at(["x", "a", "a", "b", "c", "d", None], ["a", "b", "c", "d"], 5) == 0.0
    assert complete_at(["a", None, "b", "c"], ["a", "c"], 3) == 0.0 and complete_at(["a", None, "b", "c"], ["a", "c"], 4) == 1.0
    assert r_precision(["b"], ["a", "b", "c"]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="without gold"):
        r_precision(["a"], [])


def test_item_metrics_and_aggregate_carry_them():
    rows = []
    for ranking, gold in CASES.values():
        m = item_metrics(ranking, gold, [5], "c_")
        m.update(item_metrics(ranking[::-1], gold, [5], "f_"))
        rows.append(m)
    assert [r["c_comp@5"] for r in rows] == [1.0, 1.0, 0.0, 0.0, 0.0]
    a = aggregate(rows, [5], resamples=50)
    assert a["COMPc@5"]["value"] == pytest.approx(0.4)
    assert a["Rprec_c"]["value"] == pytest.approx((0 + 0.5 + 0.5 + 0 + 1 / 3) / 5)  # "one": b is at rank 2, R = 1
    assert a["COMPc@5"]["lo"] <= 0.4 <= a["COMPc@5"]["hi"]
    assert "Rprec_f" in a and "COMPf@5" in a
    old = [{k: v for k, v in r.items() if "comp" not in k and "rprec" not in k} for r in rows]  # samples from before
    assert "COMPc@5" not in aggregate(old, [5], resamples=10) and "Rc@5" in aggregate(old, [5], resamples=10)


def test_results_table_has_comp_rprec_and_a_row_per_tier():
    from toolsense.reporting.tables import results_table

    def est(v):
        return {"value": v, "lo": v, "hi": v}

    m = {"Rc@5": est(0.5), "COMPc@5": est(0.25), "Rprec_c": est(0.125)}
    res = {"benchmark": "rrb", "system": "bm25", "kind": "retrieval", "n": 4, "metrics": m, "missing": {"count": 0},
           "tiers": {"easy": {"n": 2, "metrics": {"Rc@5": est(1.0), "COMPc@5": est(0.5), "Rprec_c": est(0.25)}},
                     "hard": {"n": 2, "metrics": {"Rc@5": est(0.0), "COMPc@5": est(0.0), "Rprec_c": est(0.0)}}}}
    lines = results_table([res], [5]).splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    col = {h: i for i, h in enumerate(head)}
    assert [c[0] for c in cells] == ["rrb", "rrb [easy]", "rrb [hard]"]
    assert [c[col["COMPc@5"]] for c in cells] == ["25.0 [25.0, 25.0]", "50.0 [50.0, 50.0]", "0.0 [0.0, 0.0]"]
    assert [c[col["Rprec c"]] for c in cells] == ["12.5 [12.5, 12.5]", "25.0 [25.0, 25.0]", "0.0 [0.0, 0.0]"]
    assert cells[0][col["Rprec f"]] == "—" and [c[col["n"]] for c in cells] == ["4", "2", "2"]
    one_tier = dict(res, tiers={"easy": res["tiers"]["easy"]})
    assert len(results_table([one_tier], [5]).splitlines()) == 3  # a single tier adds no row
