"""study/plan_report.py and sensitivity_findings.py: findings 2, 6, 7 across k and scales, and a rule
changed after results existed shown with its verdict under both rules — on hand-made items and on the
shipped study=tools archive (grid: TG seeds 0 and 1, TG-H seed 0; appendix_e: TG seed 0)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from toolsense.comparison.scales import rate_contrast
from toolsense.plan.config import AnalysisPlan, FindingRule
from toolsense.plan.registration import plan_dict, register
from toolsense.reporting.disclosure import changes_markdown
from toolsense.study.config import StudyConfig
from toolsense.study.plan_report import binding_plan, changed_findings, finding_tables, rule_changes
from toolsense.study.sweep import Settings, Sweep

ARCHIVE = Path(__file__).resolve().parents[2] / "docs" / "reports" / "reproduction_tools_results.tar.xz"


def test_rate_contrast_on_each_scale():
    # A hits 1 of 4 items, B 3 of 4 (one seed each, the same items: paired)
    arms = {"c": ({0: {"a": 1, "b": 0, "c": 0, "d": 0}}, {0: {"a": 1, "b": 1, "c": 1, "d": 0}})}
    assert rate_contrast(arms, "pp", True)["value"] == pytest.approx(0.5)
    assert rate_contrast(arms, "normalized", True)["value"] == pytest.approx(0.5 / 0.75)  # of A's misses
    assert rate_contrast(arms, "normalized", True, up=False)["value"] == pytest.approx(0.5 / 0.25)  # of A's hits
    logit = lambda p: __import__("math").log(p / (1 - p))  # noqa: E731
    assert rate_contrast(arms, "log_odds", True)["value"] == pytest.approx(logit(3.5 / 5) - logit(1.5 / 5))
    unpaired = {"c": ({0: {"a": 1, "b": 0}}, {0: {"x": 1, "y": 1, "z": 0}})}  # different items: each side drawn alone
    est = rate_contrast(unpaired, "pp", False)
    assert est["value"] == pytest.approx(2 / 3 - 1 / 2) and est["lo"] < est["value"] < est["hi"]
    assert rate_contrast(unpaired, "pp", True) is None  # nothing shared to pair
    with pytest.raises(ValueError, match="sensitivity scale 'odds'"):
        rate_contrast(arms, "odds", True)


def test_rate_contrast_is_the_headlines_estimator_on_the_pp_scale():
    """On pp, paired by seed, the sensitivity cell is seed_paired_diff (the findings' headline): the same value and
    interval, so a table's registered cell cannot read otherwise than the headline. A between-seed spread widens it."""
    import random

    from toolsense.comparison.seed_stats import seed_paired_diff

    rng = random.Random(0)
    items = [f"q{i}" for i in range(120)]
    arms = {"tg → app_e": ({s: {i: int(rng.random() < 0.4 + 0.1 * s) for i in items} for s in range(3)},
                           {s: {i: int(rng.random() < 0.5) for i in items} for s in range(3)})}
    head, cell = seed_paired_diff(arms), rate_contrast(arms, "pp", True)
    for key in ("value", "lo", "hi", "se", "df"):
        assert cell[key] == pytest.approx(head[key], rel=1e-6), key
    assert cell["n_seeds"] == 3 and not cell["one_seed"]
    steady = {"g": ({s: arms["tg → app_e"][0][1] for s in range(3)}, {s: arms["tg → app_e"][1][1] for s in range(3)})}
    assert rate_contrast(steady, "log_odds", True)["hi"] - rate_contrast(steady, "log_odds", True)["lo"] < \
        rate_contrast(arms, "log_odds", True)["hi"] - rate_contrast(arms, "log_odds", True)["lo"]


def test_the_binding_plan_is_the_last_one_recorded_before_any_result():
    reg = {"plan": {"min_seeds": 3}, "at": "t0", "finished_runs_before": 0,
           "changes": [{"plan": {"min_seeds": 2}, "at": "t1", "finished_runs_before": 0},
                       {"plan": {"min_seeds": 1}, "at": "t2", "finished_runs_before": 4}]}
    assert binding_plan(reg) == {"plan": {"min_seeds": 2}, "at": "t1", "finished_runs_before": 0, "late": False}
    late = {"plan": {"min_seeds": 3}, "at": "t0", "finished_runs_before": 5, "changes": []}
    assert binding_plan(late)["late"] is True
    a = {"min_seeds": 3, "retrieval_floor": 0.1, "findings": {"1": {"k": 5}, "7": {"k": 5}}}
    assert changed_findings(a, {**a, "findings": {"1": {"k": 10}, "7": {"k": 5}}}) == {1: ["findings.1.k"]}
    assert set(changed_findings(a, {**a, "min_seeds": 2})) == set(range(1, 8))  # moves every verdict
    assert changed_findings(a, {**a, "sensitivity_ks": [1]}) == {}  # moves the tables only


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    assert ARCHIVE.is_file(), f"{ARCHIVE} is shipped with the repo (a moved archive must not turn these tests into skips)"
    root = tmp_path_factory.mktemp("tools")
    with tarfile.open(ARCHIVE) as tar:
        keep = [m for m in tar.getmembers() if m.name.split("/")[1:2] in (["grid"], ["appendix_e"])]
        tar.extractall(root, members=keep)
    return root / "reproduce_tools"


@pytest.mark.slow
def test_findings_2_6_7_across_k_and_scales_on_the_shipped_runs(tools):
    g, e = Sweep("grid", tools / "grid", 5, 100), Sweep("appendix_e", tools / "appendix_e", 5, 100)
    t = finding_tables(AnalysisPlan(), g, e, 5, 100)
    assert set(t) == {1, 2, 6, 7}
    # 2: TG collapses at every k and scale, TG-H (12% standard Rc@5) never clearly does: the pooled verdict holds
    assert t[2]["depends_on"] == []
    assert t[2]["cells"][(5, "pp")]["per_row"]["tg-lora"]["value"] == pytest.approx(0.522, abs=0.001)
    assert t[2]["cells"][(5, "pp")]["per_row_verdict"]["tg_h-lora"].startswith("inconclusive")
    # 6: flat drifts 2.8x hierarchical, but less than it once each run's base-vocabulary drift is divided out
    assert t[6]["cells"][(None, "drift_absolute")]["verdict"] == "yes"
    assert t[6]["cells"][(None, "drift_base_normalized")]["verdict"] == "no" and t[6]["depends_on"] == ["the scale"]
    # 7: App. E's trade holds at k <= 10 and is inconclusive at 50 (standard no longer clearly drops)
    assert t[7]["cells"][(10, "log_odds")]["verdict"] == "yes"
    assert t[7]["cells"][(50, "pp")]["verdict"].startswith("inconclusive")
    assert t[7]["depends_on"] == ["k"]
    high = finding_tables(AnalysisPlan(retrieval_floor=0.2), g, e, 5, 100)  # TG-H below the floor: shown, not pooled
    assert high[2]["below_floor"] == ["tg_h-lora"] and "tg_h-lora" in high[2]["cells"][(5, "pp")]["per_row"]


@pytest.mark.slow
def test_a_rule_changed_after_results_shows_both_verdicts(tools, tmp_path):
    """Finding 1 registered at Rc@5 pp before any run, moved to Rc@10 once runs had finished."""
    first = AnalysisPlan(min_seeds=1, findings={1: FindingRule(k=5, scale="pp")})
    cfg = StudyConfig(name="toy", root=str(tmp_path / "root"), analysis=first)
    register(cfg, now=0)
    (tmp_path / "root").rename(tmp_path / "reg")
    (tools / "registration.json").unlink(missing_ok=True)
    (tmp_path / "reg" / "registration.json").rename(tools / "registration.json")
    later = AnalysisPlan(min_seeds=1, findings={1: FindingRule(k=10, scale="pp")})
    reg = register(StudyConfig(name="toy", root=str(tools), analysis=later), now=60)
    assert reg["plan"] == plan_dict(first) and reg["changes"][0]["finished_runs_before"] == 4  # kept, not overwritten
    g = Sweep("grid", tools / "grid", 5, 100)
    view, s = {"grid": g}, Settings(k=5, resamples=100, min_seeds=1)
    changes = rule_changes(reg, later, view, s, finding_tables(later, g, None, 5, 100))
    assert list(changes) == [1] and changes[1]["moved"] == ["findings.1.k"]
    assert changes[1]["verdict_registered"] == "yes" and changes[1]["verdict_now"].startswith("inconclusive")
    text = changes_markdown(changes)
    assert "**Rule changed after results existed**" in text and "| 1 | findings.1.k | Rc@5 pp, margin 5 pp" in text
    # the same change applied at report time, never registered, is flagged alike (a report is made from results)
    unregistered = rule_changes({**reg, "changes": []}, later, view, s, finding_tables(later, g, None, 5, 100))
    assert unregistered[1]["verdict_registered"] == "yes"
    assert rule_changes(reg, first, view, s, {}) == {}  # back to the binding plan: nothing to flag
    (tools / "registration.json").unlink()


def test_finding_1_is_judged_on_the_scale_its_plan_registers(tools):
    """A plan that registers finding 1 in pp (study=replication) is judged on the pp difference of the gains, with
    seeds; without one, on the normalized gains (study=tools' revised rule)."""
    from types import SimpleNamespace

    from toolsense.comparison.verdicts import verdict
    from toolsense.study.findings.f1_lift import stage2_lift
    from toolsense.study.report import settings_of

    g = Sweep("grid", tools / "grid", 5, 100)
    pp = stage2_lift({"grid": g}, Settings(k=5, resamples=100, min_seeds=1, gain_scale="pp"))
    norm = stage2_lift({"grid": g}, Settings(k=5, resamples=100, min_seeds=1))
    assert pp.verdict == verdict(pp.details["lift_difference"]) and "rests on the difference in pp" in pp.ours
    assert norm.verdict == verdict(norm.details["normalized_gain"]) and "of the normalized gains" in norm.ours
    assert pp.ours.startswith("Stage-2 gain in pp (Stage 2 − Stage 1 Rc@5): standard ")  # the registered scale leads
    assert norm.ours.startswith("Stage-2 gain as the share of Stage 1's misses recovered (net): standard ")
    assert "; in pp: Stage-2 gain" in norm.ours
    assert "on the scale the plan registers" in pp.details["rule"]  # the header's rule text does not claim one scale
    base = dict(k=5, resamples=100, margin=0.1, min_hits=10)
    plan = AnalysisPlan(findings={1: FindingRule(k=5, scale="pp")})
    assert settings_of(SimpleNamespace(**base, analysis=plan)).gain_scale == "pp"
    assert settings_of(SimpleNamespace(**base, analysis=None)).gain_scale == "normalized"


def test_findings_1_and_2_take_the_plans_arms_and_leave_out_a_configuration_below_the_floor(tools):
    """study=tools' TG-H (standard Rc@5 12%) under a 20% floor: named, not averaged in, so findings 1 and 2 equal
    their reading of TG alone; the plan's arms restrict them the same way (the replication's headline had pooled TG-H)."""
    from types import SimpleNamespace

    from toolsense.study.findings.f1_lift import stage2_lift
    from toolsense.study.findings.f2_collapse import realistic_collapse
    from toolsense.study.report import settings_of

    g = {"grid": Sweep("grid", tools / "grid", 5, 100)}
    base = dict(k=5, resamples=100, min_seeds=1, gain_scale="pp")
    pooled, floored, armed = (Settings(**base), Settings(**base, retrieval_floor=0.2),
                              Settings(**base, arms={1: ("tg-lora",), 2: ("tg-lora",)}))
    for finding in (stage2_lift, realistic_collapse):
        p, f, a = (finding(g, s) for s in (pooled, floored, armed))
        assert f.details["below_floor"] == ["tg_h-lora"] and "left out: tg_h-lora (standard Rc@5 12" in f.ours
        assert "tg_h-lora" not in p.ours.split("left out")[0] or "left out" not in p.ours
        assert f.verdict == a.verdict and f.details.get("lift_difference", f.details.get("collapse")) == \
            a.details.get("lift_difference", a.details.get("collapse"))
        assert p.details.get("lift_difference", p.details.get("collapse")) != f.details.get("lift_difference", f.details.get("collapse"))
    lift = stage2_lift(g, Settings(**base, retrieval_floor=0.99))  # nothing retrieves (TG: 95.8%): no verdict, the rows named
    assert lift.verdict == "untestable" and "left out: tg-lora" in lift.ours
    plan = AnalysisPlan(retrieval_floor=0.15, findings={1: FindingRule(k=5, scale="pp", arms=["tg-lora"])})
    s = settings_of(SimpleNamespace(k=5, resamples=100, margin=0.1, min_hits=10, analysis=plan))
    assert s.retrieval_floor == 0.15 and s.arms == {1: ("tg-lora",)}


def test_finding_7_names_each_sweeps_arm_in_its_seed_gate(tools, study_tools_catalog):
    """App. E and TG are both labelled tg-lora: the gate names the sweep, and counts the seeds the two share (its
    coverage rebuilds the runs' Stage-2 queries from catalog=study_tools)."""
    from toolsense.study.findings.f7_appendix_e import appendix_e

    sw = {"grid": Sweep("grid", tools / "grid", 5, 100), "appendix_e": Sweep("appendix_e", tools / "appendix_e", 5, 100)}
    f = appendix_e(sw, Settings(k=5, resamples=100, min_seeds=3))
    assert f.verdict == "not enough seeds (arm appendix_e tg-lora has 1, arm grid tg-lora has 1)"
    assert f.details["seeds"] == {"appendix_e tg-lora": 1, "grid tg-lora": 1}
    # all items, like covered ones, pair the seed both sweeps hold (TG's seed 1 has no App. E partner)
    for side in ("realistic_gain", "standard_change"):
        assert f.details[side]["all"]["one_seed"] and f.details[side]["covered"]["one_seed"]


def test_finding_3_across_k(tools):
    """Flat − hierarchical IS at each k, each on the sweep read at that k: study=tools' TG (2 seeds) against TG-H
    (1 seed) points the other way at k = 5, 10, 50; at k = 1 TG-H has too few hits and the k is listed, not judged."""
    from toolsense.reporting.sensitivity_table import sensitivity_markdown
    from toolsense.study.findings.f3_internalization import is_sensitivity

    t = is_sensitivity(Sweep("grid", tools / "grid", 5, 100), [1, 5, 10, 50], 100)
    assert t["not_evaluated"] == [1] and set(t["cells"]) == {(5, "IS"), (10, "IS"), (50, "IS")}
    assert [t["cells"][(k, "IS")]["verdict"] for k in (5, 10, 50)] == ["no", "no", "no"] and t["depends_on"] == []
    assert -0.75 < t["cells"][(5, "IS")]["pooled"]["value"] < -0.6  # TG 0.27 vs TG-H 0.96 on few hits, as the issue read
    assert "| 10 | IS | -0.43 [" in sensitivity_markdown(t) and "k = 1 not evaluated: too few hits" in sensitivity_markdown(t)


def test_finding_7s_table_and_headline_judge_both_parts_alike():
    """A claim that needs both parts leans no when one part leans no (the table had leaned yes on a tie)."""
    from toolsense.comparison.verdicts import conjunction

    assert conjunction(["inconclusive (leans no)", "yes"]) == "inconclusive (leans no)"
    assert conjunction(["inconclusive (leans yes)", "yes"]) == "inconclusive (leans yes)"
    assert conjunction(["yes", "yes"]) == "yes" and conjunction(["no", "yes"]) == "no"
