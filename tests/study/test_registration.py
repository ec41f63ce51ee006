"""plan/registration.py: a study's analysis plan is recorded (hash, commit) before its first result,
and a rule changed afterwards is kept as a change with the keys that moved."""

from __future__ import annotations

import tarfile

import pytest

from toolsense.conduct.archive import archive_results
from toolsense.plan.config import AnalysisPlan, FindingRule
from toolsense.plan.registration import changed_rules, plan_hash, read_registration, register
from toolsense.study.config import StudyConfig
from toolsense.utils.errors import ConfigError


def _cfg(tmp_path, **plan) -> StudyConfig:
    return StudyConfig(name="t", root=str(tmp_path / "root"),
                       analysis=AnalysisPlan(findings={1: FindingRule(metric="Rc", k=5, scale="pp", arms=["tg-lora"])}, **plan))


def test_the_plan_is_registered_once_and_a_later_change_is_kept_beside_it(tmp_path):
    cfg = _cfg(tmp_path)
    reg = register(cfg, now=0)
    assert reg["sha256"] == plan_hash(cfg.analysis) and reg["finished_runs_before"] == 0 and reg["changes"] == []
    assert reg["at"] == "1970-01-01T00:00:00Z" and reg["plan"]["findings"]["1"]["arms"] == ["tg-lora"]
    assert register(cfg, now=10) == reg  # same plan: nothing written
    assert changed_rules(reg) == []
    run = tmp_path / "root/grid/0_tg-lora"
    run.mkdir(parents=True)
    (run / "done.json").write_text("{}")
    changed = _cfg(tmp_path, min_seeds=2)
    changed.analysis.findings[1].scale = "normalized"
    reg2 = register(changed, now=20)
    assert reg2["sha256"] == reg["sha256"] and len(reg2["changes"]) == 1  # the first registration is kept
    ch = reg2["changes"][0]
    assert ch["moved"] == ["findings.1.scale", "min_seeds"] and ch["finished_runs_before"] == 1
    [after] = changed_rules(read_registration(cfg.root))
    assert after["before"]["findings"]["1"]["scale"] == "pp" and after["after"]["findings"]["1"]["scale"] == "normalized"


def test_the_registration_travels_in_the_archive(tmp_path):
    cfg = _cfg(tmp_path)
    register(cfg)
    n = archive_results(cfg.root, tmp_path / "a.tar.xz")
    with tarfile.open(tmp_path / "a.tar.xz") as tar:
        names = tar.getnames()
    assert n == 1 and names == ["root/registration.json"]


def test_a_bad_plan_is_refused_naming_the_field(tmp_path):
    with pytest.raises(ValueError, match=r"analysis\.min_seeds must be >= 1"):
        AnalysisPlan(min_seeds=0)
    with pytest.raises(ValueError, match=r"analysis\.findings\.1: k must be >= 1"):
        AnalysisPlan(findings={1: FindingRule(k=0)})
    (tmp_path / "root").mkdir()
    (tmp_path / "root/registration.json").write_text("{torn")
    with pytest.raises(ValueError, match=r"registration\.json: not a registration file"):
        register(_cfg(tmp_path))


def test_a_closed_study_refuses_to_train_but_rebuilds(tmp_path):
    from toolsense.study.run import run_study
    cfg = StudyConfig(name="old", root=str(tmp_path / "root"), closed="its runs used verbose queries v1")
    with pytest.raises(ConfigError, match=r"study=old is closed: its runs used verbose queries v1 \(rebuild its report with train=false\)"):
        run_study(cfg)
    assert not (tmp_path / "root").exists()  # nothing written, not even a registration
