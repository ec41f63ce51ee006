"""conf/audit.yaml and the audit dataclasses hold one set of defaults; the demo's differences
come from conf/audit/mode/demo.yaml alone."""

import dataclasses

import pytest
from omegaconf import OmegaConf

from toolsense.audit.config import AuditConfig, audit_config

SECTIONS = ["data", "generator", "stats", "pt2d", "dilution", "prompt", "finetune"]


def _defaults(section: str) -> dict:
    f = AuditConfig.__dataclass_fields__[section]
    return dataclasses.asdict(f.default_factory())


@pytest.mark.parametrize("section", SECTIONS)
def test_yaml_equals_the_dataclass_defaults(section, compose):
    yaml = OmegaConf.to_container(compose(["data.path=null", "output_dir=/tmp/unused"]), resolve=True)[section]
    assert yaml == _defaults(section)


def test_demo_mode_config_sets_the_documented_finetune(compose):
    cfg = audit_config(compose(["audit/mode=demo", "output_dir=/tmp/unused"]))
    assert cfg.mode == "demo" and cfg.finetune.enabled is True
    assert (cfg.finetune.lr, cfg.finetune.steps) == (3e-3, 150)
    # everything else in the finetune section is the general default
    other = {k: v for k, v in dataclasses.asdict(cfg.finetune).items() if k not in ("lr", "steps", "enabled")}
    assert other == {k: v for k, v in _defaults("finetune").items() if k not in ("lr", "steps", "enabled")}
    plain = audit_config(compose(["data.path=x.jsonl", "output_dir=/tmp/unused", "finetune.enabled=true"]))
    assert plain.mode == "audit" and (plain.finetune.lr, plain.finetune.steps) == (2e-3, 200)
