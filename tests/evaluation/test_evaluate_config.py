"""evaluate.py's config spine: EvaluateConfig holds every default, conf/evaluate.yaml only the
defaults list; every override users type still lands."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from toolsense.evaluation.config import EvaluateConfig, MetricsConfig, Task
from toolsense.utils.compose import conf_dir
from toolsense.utils.config import as_plain, to_config


def _compose(overrides: list[str]):
    from toolsense.utils.compose import compose

    return compose("evaluate", overrides=overrides)


def test_evaluate_yaml_holds_no_dataclass_default():
    yaml = OmegaConf.load(conf_dir() / "evaluate.yaml")
    assert set(yaml) == {"defaults", "hydra"}


def test_composed_config_is_the_dataclass_defaults_plus_the_groups():
    cfg = to_config(EvaluateConfig, _compose([]))
    defaults = EvaluateConfig()
    for name in ("run", "stage", "device", "dtype", "task", "parametric", "overwrite", "output_dir", "drift"):
        assert getattr(cfg, name) == getattr(defaults, name), name
    assert cfg.task is Task.evaluate and cfg.logger.kind == "none" and cfg.decoding.beam_width == 50
    assert cfg.benchmark_sections()["standard"].style == "verbose" and cfg.baseline_sections() == {}


def test_metrics_hold_what_is_computed_from_the_rankings():
    """Cut-offs and the bootstrap live in ``metrics`` (the decoding section is the search's own,
    decoding/config.py), whose ks default to the paper's within the beam."""
    from toolsense.evaluation.fingerprint import decoding_identity

    assert [f.name for f in dataclasses.fields(MetricsConfig)] == ["ks", "resamples", "seed", "min_hits"]
    assert to_config(EvaluateConfig, _compose([])).metrics.ks == [1, 5, 10, 50]
    cfg = to_config(EvaluateConfig, _compose(["decoding=beam10", "metrics.resamples=7"]))
    assert (cfg.metrics.ks, cfg.metrics.resamples, cfg.decoding.beam_width) == ([1, 5, 10], 7, 10)
    assert to_config(EvaluateConfig, _compose(["decoding.beam_width=3"])).metrics.ks == [1]
    # the fingerprint reads as one written while ks was a decoding field: old folders resume
    old = {"beam_width": 10, "ks": [1, 5, 10], "free_form": True, "fast_flat": True, "share_prefix": True,
           "max_new_tokens": None, "length_penalty": 1.0}
    assert decoding_identity(cfg.decoding, cfg.metrics.ks) == old


def test_every_documented_override_still_lands():
    cfg = to_config(EvaluateConfig, _compose(["task=drift", "run=r", "drift.seed=3", "stage=stage1",
                                              "overwrite=true", "logger=wandb", "suite=demo", "decoding=beam10"]))
    assert cfg.task is Task.drift and cfg.run == "r" and cfg.drift.seed == 3
    assert (cfg.stage, cfg.overwrite, cfg.logger.kind, cfg.decoding.beam_width) == ("stage1", True, "wandb", 10)
    assert list(cfg.benchmark_sections()) == ["standard", "realistic", "mcq", "qa"] and list(cfg.baseline_sections()) == ["bm25", "dense"]
    assert as_plain(cfg)["task"] == "drift"


@pytest.mark.parametrize("overrides, message", [
    (["task=score"], "task='score': choose from ['evaluate', 'drift']"),
    # the jobs that left evaluate.py say where they went
    (["task=compare"], "task=compare is no longer a job of evaluate.py (it evaluates one system); run: python compare.py roots="),
    (["task=annotate"], "task=annotate is no longer a job of evaluate.py (it evaluates one system); run: python annotate.py benchmark="),
    (["task=kappa"], "task=kappa is no longer a job of evaluate.py (it evaluates one system); run: python annotate.py task=kappa"),
    (["task=drift"], "task=drift needs run=<training run directory>"),
    (["metrics.ks=[1,99]"], "metrics.ks must lie in [1, decoding.beam_width=50], got [99]"),
    (["baseline=bm25", "baseline.kind=splade"], "baseline.kind='splade': choose from ['bm25', 'dense', 'openai']"),
    (["+benchmark.nope=1"], "benchmark: unknown field(s) ['nope']"),
    # issue 21: each of these used to load the model first (or exit 0 with an empty table)
    (["metrics.ks=[]"], "metrics.ks is empty"),
    (["metrics.ks=[0,5]"], "metrics.ks must lie in [1, decoding.beam_width=50], got [0]"),
    (["decoding=beam10", "metrics.ks=[1,11]"], "metrics.ks must lie in [1, decoding.beam_width=10], got [11]"),
    (["metrics.ks=[5,5]"], "metrics.ks repeats a cut-off: [5, 5]"),
    (["metrics.ks=[1.5]"], "metrics.ks[0]=1.5: must be a whole number"),  # issue 38: a TypeError mid-run
    (["decoding.beam_width=-1"], "decoding.beam_width must be >= 1, got -1"),
    (["decoding.batch_size=-2"],
     "decoding.batch_size must be a positive integer or auto (sized for the device: 8 on a CPU, by free memory on a GPU), got -2"),
    (["decoding.batch_size=0"], "decoding.batch_size must be a positive integer or auto"),
    (["decoding.batch_size=sideways"],
     "decoding.batch_size must be a positive integer or auto (sized for the device: 8 on a CPU, by free memory on a GPU), "
     "got 'sideways'"),
    (["decoding.batch_size=true"], "decoding.batch_size=True: must be a whole number"),
    (["decoding.batch_size=2.5"], "decoding.batch_size=2.5: must be a whole number"),
    (["decoding.max_new_tokens=0"], "decoding.max_new_tokens must be >= 1 or null, got 0"),
    (["metrics.resamples=0"], "metrics.resamples must be >= 1"),
    (["probe.batch_size=0"], "probe.batch_size must be >= 1, got 0"),
    (["probe.modes=[token,tokn]"], "probe.modes may only contain ['token', 'control', 'card', 'options'], got ['tokn']"),
    (["probe.modes=[token,token]"], "probe.modes repeats a mode"),
    (["probe.flag_share=1.5"], "probe.flag_share must lie in (0, 1], got 1.5"),
    (["probe.template='{question} {options}'"], "probe.template may use ['choices', 'options', 'question', 'tool'] and "
                                                 "needs {tool}, {question} and {options}; unknown [], absent ['tool']"),
    (["probe.template='{tool} {question} {options} {answer}'"], "unknown ['answer']"),
    (["probe.debias=always"], "probe.debias='always': choose from ['none', 'circular']"),
    (["benchmark.limit=-1"], "benchmark.limit must be >= 1 or null, got -1"),
    (["benchmark.loader=nope"], "benchmark.loader='nope': choose from"),
    (["suite=demo", "benchmarks.realistic.limit=0"], "benchmarks.realistic: benchmark.limit must be >= 1 or null, got 0"),
    (["baseline=bm25", "+baseline.batch_size=-1"], "baseline.batch_size and baseline.encode_batch_size must be >= 1"),
    (["drift.checkpoints=[stage2]"], "drift.checkpoints must list two or more of base, stage1, stage2"),
    (["drift.sample_size=0"], "drift.sample_size must be >= 1"),
    (["stage=stage3"], "stage must be stage1 or stage2 (a checkpoint of run), got 'stage3'"),
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


def test_empty_ks_is_refused_by_evaluate_py_before_anything_loads(tmp_path):
    """``metrics.ks=[]`` (``decoding.ks=[]`` before) used to evaluate everything and exit 0 with an empty table."""
    import os
    import subprocess
    import sys

    out = tmp_path / "out"
    cmd = [sys.executable, "evaluate.py", "model=tiny_random", "metrics.ks=[]", f"output_dir={out}"]
    proc = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[2],
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "HYDRA_FULL_ERROR": "1"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "metrics.ks is empty" in proc.stderr
    assert not out.exists()  # refused before the output folder (or a model) was touched
