"""The audit dataclasses are the one source of defaults: conf/audit.yaml composes to exactly
them (it holds only the defaults list), and the demo's differences come from
conf/audit/mode/demo.yaml alone."""

import dataclasses
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from toolsense.audit.config import AuditConfig, audit_config

SECTIONS = ["data", "generator", "stats", "pt2d", "dilution", "prompt", "finetune"]


def _defaults(section: str) -> dict:
    f = AuditConfig.__dataclass_fields__[section]
    return dataclasses.asdict(f.default_factory())


@pytest.mark.parametrize("section", SECTIONS)
def test_composed_config_equals_the_dataclass_defaults(section, compose):
    composed = OmegaConf.to_container(compose(["output_dir=/tmp/unused"]), resolve=True)[section]
    assert composed == _defaults(section)


def test_audit_yaml_repeats_no_dataclass_default():
    yaml = OmegaConf.load(Path(__file__).parents[2] / "toolsense" / "conf" / "audit.yaml")
    assert not set(yaml) & set(SECTIONS), "a section's defaults belong in its dataclass"


def test_section_overrides_still_land_without_the_keys_in_yaml(compose):
    cfg = audit_config(compose(["data.path=x.jsonl", "output_dir=/tmp/unused", "stats.n_boot=7", "dilution.ks=[0,3]",
                                "dilution.real_order=[3,1,2]", "finetune.loss_on=answer"]))
    assert (cfg.stats.n_boot, cfg.dilution.ks, cfg.dilution.real_order, cfg.finetune.loss_on) == (7, [0, 3], [3, 1, 2], "answer")
    with pytest.raises(ValueError, match=r"finetune.loss_on='both': choose from \['label', 'answer'\]"):
        audit_config(compose(["data.path=x.jsonl", "output_dir=/tmp/unused", "finetune.loss_on=both"]))


def test_demo_mode_config_sets_the_documented_finetune(compose):
    cfg = audit_config(compose(["audit/mode=demo", "output_dir=/tmp/unused"]))
    assert cfg.mode == "demo" and cfg.finetune.enabled is True
    assert (cfg.finetune.lr, cfg.finetune.steps) == (3e-3, 150)
    # everything else in the finetune section is the general default
    other = {k: v for k, v in dataclasses.asdict(cfg.finetune).items() if k not in ("lr", "steps", "enabled")}
    assert other == {k: v for k, v in _defaults("finetune").items() if k not in ("lr", "steps", "enabled")}
    plain = audit_config(compose(["data.path=x.jsonl", "output_dir=/tmp/unused", "finetune.enabled=true"]))
    assert plain.mode == "audit" and (plain.finetune.lr, plain.finetune.steps) == (2e-3, 200)
    assert audit_config(compose(["mode=demo", "output_dir=/tmp/unused"])).mode == "demo"
