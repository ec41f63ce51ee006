"""The metric registry: every results.json spelling comes from one registration, parses back to it,
and a name no registration spells is refused with the registered ones (never an empty column)."""

from __future__ import annotations

import pytest

from toolsense.comparison.compare import CompareConfig
from toolsense.metrics.aggregate import aggregate, item_metrics
from toolsense.metrics.ranking import hit_at
from toolsense.metrics.registry import METRICS, Metric, register
from toolsense.plan.config import AnalysisPlan, FindingRule
from toolsense.reporting.tables import results_table
from toolsense.utils.io import DataError

PER_ITEM = {"c_hit@1", "c_recall@1", "c_ndcg@1", "c_comp@1", "c_rprec"}


def test_the_shipped_spellings_are_those_of_the_results_files():
    # results files written before the registry (and the archived studies in docs/) use exactly these keys
    assert METRICS.spellings() == ["R{c,f}@k", "IS@k", "recall_{c,f}@k", "ndcg_{c,f}@k", "COMP{c,f}@k", "Rprec_{c,f}"]
    assert [h for h, _, _ in METRICS.table_columns([1, 5])] == [
        "Rc@1", "Rc@5", "Rf@1", "Rf@5", "IS@1", "IS@5", "COMPc@1", "COMPc@5", "COMPf@1", "COMPf@5",
        "Rprec c", "Rprec f"]
    for m in METRICS:
        for mode, k in m.series([1, 50]):
            assert METRICS.parse(m.result_key(mode, k)) == (m, mode, k)
    assert METRICS.parse("Rc@") is None and METRICS.parse("Rx@5") is None and METRICS.parse("accuracy") is None
    assert set(item_metrics(["a", None], ["a"], [1], "c_")) == PER_ITEM


def test_an_unknown_name_is_refused_naming_the_registered_ones():
    with pytest.raises(ValueError, match=r"compare\.metrics: 'COMP@5' is no registered metric; registered: R\{c,f\}@k"):
        CompareConfig(metrics=["Rc@50", "COMP@5"])
    with pytest.raises(ValueError, match=r"compare\.effect_metric: 'is@50'"):
        CompareConfig(effect_metric="is@50")
    assert CompareConfig(metrics=["Rprec_c", "ndcg_f@3"]).metrics == ["Rprec_c", "ndcg_f@3"]
    with pytest.raises(ValueError, match=r"analysis\.findings\.3\.metric='ISc': accuracy, drift or a registered"):
        AnalysisPlan(findings={1: FindingRule(metric="Rc"), 3: FindingRule(metric="ISc")})
    assert AnalysisPlan(findings={3: FindingRule(metric="IS"), 4: FindingRule(metric="accuracy")}).findings[3].k == 5


def test_a_registration_that_would_read_as_another_is_refused():
    with pytest.raises(ValueError, match=r"key 'R\{mode\}@\{k\}' reads as 'hit'"):
        register(Metric("hit2", "R{mode}@{k}", hit_at))
    with pytest.raises(ValueError, match=r"key 'Rc@\{k\}' reads as 'hit'"):
        register(Metric("rc", "Rc@{k}", aggregation="ratio", of="hit"))
    with pytest.raises(ValueError, match=r"`of` names 'nope', not a registered metric"):
        register(Metric("odd", "odd@{k}", aggregation="ratio", of="nope"))
    with pytest.raises(ValueError, match=r"must hold \{k\} iff cutoff=False"):
        Metric("top", "top_{mode}@{k}", hit_at, cutoff=False)
    with pytest.raises(ValueError, match="a ratio needs `of`"):
        Metric("odd", "odd@{k}", aggregation="ratio")
    with pytest.raises(ValueError, match=r"modes must be a non-empty subset"):
        Metric("odd", "odd_{mode}@{k}", hit_at, modes=("x",))
    with pytest.raises(ValueError, match="already registered"):
        register(Metric("hit", "hits_{mode}@{k}", hit_at))
    assert [m.name for m in METRICS] == ["hit", "is", "recall", "ndcg", "comp", "rprec"]


def test_a_renamed_metric_reads_old_files_through_its_alias_and_leaves_cleanly():
    register(Metric("top", "TOP{mode}@{k}", hit_at, aliases=("top_{mode}@{k}",), column="top {mode}@{k}"))
    try:
        old = {"Rc@1": {"value": 0.5, "lo": 0.25, "hi": 0.75}, "top_c@1": {"value": 0.125, "lo": 0.0, "hi": 0.25}}
        assert METRICS.find(old, "TOPc@1") == old["top_c@1"] and METRICS.find(old, "TOPf@1") is None
        res = {"benchmark": "b", "system": "s", "kind": "retrieval", "n": 8, "metrics": old, "missing": {"count": 0}}
        lines = results_table([res], [1]).splitlines()
        head = [c.strip() for c in lines[0].strip("|").split("|")]
        cells = [c.strip() for c in lines[2].strip("|").split("|")]
        assert cells[head.index("top c@1")] == "12.5 [0.0, 25.0]" and cells[head.index("top f@1")] == "—"
        rankings = (["g"], ["x"], [None])
        rows = [{**item_metrics(r, ["g"], [1], "c_"), **item_metrics(r, ["g"], [1], "f_")} for r in rankings]
        a = aggregate(rows, [1], resamples=20)
        assert a["TOPc@1"]["value"] == pytest.approx(1 / 3) and list(a).index("TOPf@1") == len(a) - 1
        with pytest.raises(DataError, match=r"a samples row lacks 'c_top@1' \(metric 'top'\)"):
            aggregate([{k: v for k, v in r.items() if "top" not in k} for r in rows], [1], resamples=20)
    finally:
        METRICS.remove("top")
    assert METRICS.parse("TOPc@1") is None and "TOPc@1" not in aggregate(rows, [1], resamples=20)
    register(Metric("free_top", "TOP{mode}@{k}", hit_at, modes=("f",)))
    try:
        assert METRICS.parse("TOPf@3")[1:] == ("f", 3) and METRICS.parse("TOPc@3") is None
        assert set(item_metrics(["g"], ["g"], [1], "c_")) == PER_ITEM  # a free-form-only metric has no c_ value
    finally:
        METRICS.remove("free_top")
    with pytest.raises(ValueError, match=r"metric 'hit' is the base of \['is'\]"):
        METRICS.remove("hit")


def test_keys_are_derived_from_the_registry_under_their_current_spelling():
    assert [METRICS.key("Rc", 5), METRICS.key("IS", 50), METRICS.key("COMPf", 10), METRICS.key("ndcg_c", 5)] == [
        "Rc@5", "IS@50", "COMPf@10", "ndcg_c@5"]
    assert METRICS.key("Rprec_c") == "Rprec_c"
    assert [METRICS.item_key("Rc", 5), METRICS.item_key("Rf", 1), METRICS.item_key("Rprec_f")] == ["c_hit@5", "f_hit@1", "f_rprec"]
    assert METRICS.item_key("Rc", 5, prefix="") == "hit@5"
    with pytest.raises(ValueError, match=r"metric key: 'Rx@5' is no registered metric; registered: R\{c,f\}@k"):
        METRICS.key("Rx", 5)
    with pytest.raises(ValueError, match=r"'Rprec_c@5' is no registered metric"):  # no cut-off: the key is the whole stem
        METRICS.key("Rprec_c", 5)
    with pytest.raises(ValueError, match=r"'IS@5' is a ratio \('is'\): it has no per-item value"):
        METRICS.item_key("IS", 5)
    register(Metric("top", "TOP{mode}@{k}", hit_at, aliases=("top_{mode}@{k}",)))
    try:  # a renamed metric: its old stem gives the current key
        assert METRICS.key("top_c", 3) == "TOPc@3" and METRICS.item_key("top_f", 3) == "f_top@3"
    finally:
        METRICS.remove("top")
