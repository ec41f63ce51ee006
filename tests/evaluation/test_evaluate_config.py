"""evaluate.py's config spine: EvaluateConfig holds every default, conf/evaluate.yaml only the
defaults list; every override users type still lands."""

from __future__ import annotations

import dataclasses

import pytest
from omegaconf import OmegaConf

from toolsense.evaluation.config import EvaluateConfig, Task
from toolsense.evaluation.runner import CONF_DIR
from toolsense.utils.config import as_plain, to_config


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("evaluate", overrides=overrides)


def test_evaluate_yaml_holds_no_dataclass_default():
    yaml = OmegaConf.load(CONF_DIR / "evaluate.yaml")
    assert set(yaml) == {"defaults", "hydra"}


def test_composed_config_is_the_dataclass_defaults_plus_the_groups():
    cfg = to_config(EvaluateConfig, _compose([]))
    defaults = EvaluateConfig()
    for name in ("run", "stage", "device", "dtype", "task", "parametric", "overwrite", "output_dir", "drift", "compare"):
        assert getattr(cfg, name) == getattr(defaults, name), name
    assert cfg.task is Task.evaluate and cfg.logger.kind == "none" and cfg.decoding.beam_width == 50
    assert cfg.benchmark_sections()["standard"].style == "verbose" and cfg.baseline_sections() == {}


def test_every_documented_override_still_lands():
    cfg = to_config(EvaluateConfig, _compose(["task=compare", "compare.roots=[a,b]", "drift.seed=3", "stage=stage1",
                                              "overwrite=true", "logger=wandb", "suite=demo", "decoding=beam10"]))
    assert cfg.task is Task.compare and cfg.compare.roots == ["a", "b"] and cfg.drift.seed == 3
    assert (cfg.stage, cfg.overwrite, cfg.logger.kind, cfg.decoding.beam_width) == ("stage1", True, "wandb", 10)
    assert list(cfg.benchmark_sections()) == ["standard", "realistic", "mcq", "qa"] and list(cfg.baseline_sections()) == ["bm25", "dense"]
    assert as_plain(cfg)["task"] == "compare"


@pytest.mark.parametrize("overrides, message", [
    (["task=score"], "task='score': choose from ['evaluate', 'drift', 'compare', 'annotate', 'kappa']"),
    (["task=drift"], "task=drift needs run=<training run directory>"),
    (["decoding.ks=[1,99]"], "decoding.ks must lie in [1, beam_width=50], got [99]"),
    (["baseline=bm25", "baseline.kind=splade"], "baseline.kind='splade': choose from ['bm25', 'dense', 'openai']"),
    (["+benchmark.nope=1"], "benchmark: unknown field(s) ['nope']"),
])
def test_bad_values_name_the_field(overrides, message):
    with pytest.raises(ValueError) as e:
        to_config(EvaluateConfig, _compose(overrides))
    assert message in str(e.value)


def test_a_typo_in_a_section_key_fails_at_compose_time():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="drift.sed"):
        _compose(["drift.sed=3"])
    assert dataclasses.is_dataclass(EvaluateConfig)
