"""#47: the extension's plan schema: secondary endpoints, seed subsets and a power calculation registered with the
plan (left out of its hash when empty, so the plans registered before them keep theirs), and the power calculation
printed in the report's plan section beside the seeds each arm has."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from toolsense.plan.config import AnalysisPlan, FindingRule, PowerRule
from toolsense.plan.power import power_section
from toolsense.plan.registration import plan_dict, plan_hash
from toolsense.study.config import StudyConfig, register_configs
from toolsense.study.plan_report import as_plan
from toolsense.utils.compose import compose
from toolsense.utils.config import to_config

ROOT = Path(__file__).resolve().parents[2]
RULE = FindingRule(metric="Rc", k=5, scale="pp", margin=0.05, arms=["tg-lora"])
EXTENSION = """# @package _global_
defaults:
  - replication
analysis:
  secondary:
    toolbench: {standard: toolbench}                # real ToolBench G1/G2/G3 in place of the generated standard queries
    single_gold: {realistic: realistic_single}      # suite=study_extension's single-gold RRB items
  seed_subsets: [3]
  power: {between_seed_sd: 0.06, within_seed_se: 0.02, effect: 0.08, source: "replication, 3 TG seeds"}
  findings:
    7: {metric: Rc, k: 5, scale: pp, margin: 0.05, arms: [tg-lora],
        power: {between_seed_sd: 0.10, within_seed_se: 0.0, effect: 0.10, method: normal}}
"""
"""The keys an extension plan writes (conf/study/<name>.yaml), over the replication's plan."""


def test_the_new_fields_stay_out_of_the_hash_until_set():
    plain = AnalysisPlan(findings={1: RULE})
    d = plan_dict(plain)
    assert not {"secondary", "seed_subsets", "power"} & set(d) and "power" not in d["findings"]["1"]
    for extra in ({"secondary": {"toolbench": {"standard": "toolbench"}}}, {"seed_subsets": [3]},
                  {"power": PowerRule(between_seed_sd=0.06)}):
        assert plan_hash(AnalysisPlan(findings={1: RULE}, **extra)) != plan_hash(plain), extra
    own = AnalysisPlan(findings={1: FindingRule(**{**RULE.__dict__, "power": PowerRule(effect=0.1)})})
    assert plan_dict(own)["findings"]["1"]["power"]["effect"] == 0.1 and plan_hash(own) != plan_hash(plain)
    assert as_plan(plan_dict(own)) == own  # a registered plan read back, its power rules typed


def test_every_committed_archives_plan_still_hashes_as_registered():
    register_configs()
    for study, archive in (("replication", "replication_results.tar.xz"), ("pilot", "pilot_results.tar.xz"),
                           ("extension", "extension_results.tar.xz")):
        with tarfile.open(ROOT / "docs" / "reports" / archive) as tar:
            reg = json.load(tar.extractfile(f"{study}/registration.json"))
        cfg = to_config(StudyConfig, compose("reproduce", [f"study={study}"]))
        assert plan_hash(cfg.analysis) == (reg["changes"][-1] if reg["changes"] else reg)["sha256"], study
        assert plan_hash(as_plan(reg["plan"])) == reg["sha256"], study  # the stored plan, read back, hashes the same


def test_the_yaml_keys_the_extension_plan_writes_compose_into_the_schema(tmp_path):
    register_configs()
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "ext_test.yaml").write_text(EXTENSION, encoding="utf-8")
    cfg = to_config(StudyConfig, compose("reproduce", [f"hydra.searchpath=[file://{tmp_path}]", "study=ext_test"]))
    a = cfg.analysis
    assert a.secondary == {"toolbench": {"standard": "toolbench"}, "single_gold": {"realistic": "realistic_single"}}
    assert a.seed_subsets == [3] and a.power == PowerRule(0.06, 0.02, 0.08, source="replication, 3 TG seeds")
    assert a.findings[7].power == PowerRule(0.10, 0.0, 0.10, method="normal") and a.findings[1].power is None
    assert plan_dict(a)["secondary"]["single_gold"] == {"realistic": "realistic_single"}


@pytest.mark.parametrize("kwargs, message", [
    ({"seed_subsets": [0]}, r"analysis.seed_subsets: seeds per arm must be >= 1"),
    ({"secondary": {"tb": {}}}, r"analysis.secondary.tb: a primary benchmark label -> another benchmark's label"),
    ({"secondary": {"tb": {"standard": "standard"}}}, r"analysis.secondary.tb"),
    ({"power": PowerRule(effect=0.0)}, r"analysis.power: between_seed_sd and within_seed_se must be >= 0 and effect in"),
    ({"power": PowerRule(alpha=1.5)}, r"analysis.power: alpha and power must lie in \(0, 1\)"),
    ({"findings": {7: FindingRule(power=PowerRule(between_seed_sd=-1))}}, r"analysis.findings.7.power: between_seed_sd"),
    ({"power": PowerRule(items=1)}, r"analysis.power.items must be 0 \(infinitely many\) or >= 2, got 1"),
])
def test_a_bad_extension_plan_is_refused_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AnalysisPlan(**kwargs)


def test_the_plan_section_prints_the_seeds_needed_beside_the_seeds_run():
    plan = AnalysisPlan(findings={1: RULE, 3: FindingRule(metric="IS"),
                                  7: FindingRule(power=PowerRule(between_seed_sd=0.10, effect=0.10, method="normal"))},
                        power=PowerRule(between_seed_sd=0.06, within_seed_se=0.02, effect=0.08, source="replication"))
    found = {1: {"tg-lora": 5}, 2: {"tg-lora": 5},  # 2: not registered, no power row
             3: {"tg-lora": 13, "tg_h-lora": 13}, 7: {"appendix_e tg-lora": 8, "grid tg-lora": 8}}
    text = power_section(plan, found)
    assert "| 1 | 8.0 pp | 6.0 pp | 2.0 pp | 0.05, 0.8 | 10 (t) | tg-lora 5 | short: tg-lora | 10.4 pp | replication |" in text
    assert "| 3 | 8.0 pp | 6.0 pp | 2.0 pp | 0.05, 0.8 | 10 (t) | tg-lora 13, tg_h-lora 13 | yes | 7.4 pp | replication |" in text
    assert "| 7 | 10.0 pp | 10.0 pp | 0.0 pp | 0.05, 0.8 | 8 (normal) | appendix_e tg-lora 8, grid tg-lora 8 | yes | 9.9 pp | — |" in text
    assert "| 2 |" not in text and "Power (registered with the plan)" in text
    wide = AnalysisPlan(power=PowerRule(between_seed_sd=0.06, within_seed_se=0.03, effect=0.08))
    assert "none reaches it" in power_section(wide, {1: {"tg-lora": 5}}) and power_section(AnalysisPlan(), found) == ""


def test_the_shipped_extension_plan_composes_and_sizes_its_seeds_by_its_power_rules():
    """conf/study/extension.yaml (issue 47 item 2): the pilot's setting for both arms, 5 seeds per arm, the secondary
    endpoints, and the power table the report prints: finding 1 short of the 12 seeds its rule asks, finding 7 of 6."""
    register_configs()
    cfg = to_config(StudyConfig, compose("reproduce", ["study=extension"]))
    assert "stage1.epochs=2" in cfg.common and "stage2.epochs=2" in cfg.common and "evaluate.suite=study_extension" in cfg.common
    assert cfg.sweeps["grid"] == ["trainer.seed=0,1,2,3,4", "experiment=tg,tg_h"] and "trainer.seed=0,1,2,3,4" in cfg.sweeps["appendix_e"]
    a = cfg.analysis
    assert sorted(a.findings) == [1, 2, 3, 6, 7] and a.seed_subsets == [3] and set(a.secondary) == {"toolbench", "single_gold"}
    text = power_section(a, {1: {"tg-lora": 5}, 7: {"appendix_e tg-lora": 5, "grid tg-lora": 5}, 3: {"tg-lora": 5}})
    assert "| 1 | 8.0 pp | 3.2 pp | 2.7 pp | 0.05, 0.8 | 12 (t) | tg-lora 5 | short: tg-lora | 8.7 pp |" in text
    assert "| 7 | 5.0 pp | 3.1 pp | 0.4 pp | 0.05, 0.8 | 6 (t) | appendix_e tg-lora 5, grid tg-lora 5 | short: " in text
    assert "| 3 |" not in text  # no power input for the flat-vs-hierarchical findings
