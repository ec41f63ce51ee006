"""The studies write their evaluation after training as unquoted override lists
(``evaluate.overrides=[~benchmarks.mcq,~benchmarks.qa]``); each sweep's runs get exactly the
evaluate section they were trained with when the lists were quoted three levels deep, so a run
finished under the old configs is still finished (its done.json hashes the whole config)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from toolsense.pipeline import NOT_RESULT
from toolsense.study.config import StudyConfig
from toolsense.study.config import register_configs as study_configs
from toolsense.training import TrainConfig
from toolsense.training import register_configs as train_configs
from toolsense.utils.compose import compose, quote_list_overrides
from toolsense.utils.config import to_config, to_plain
from toolsense.utils.rundir import _config_sha256

ROOT = Path(__file__).resolve().parents[2]


def _jobs(study: str, sweep: str) -> tuple[StudyConfig, list[list[str]]]:
    """The study's config and the train.py overrides of each job of one sweep, as Hydra's sweeper expands them."""
    study_configs()
    train_configs()
    cfg = to_config(StudyConfig, compose("reproduce", [f"study={study}"]))
    parsed = OverridesParser.create().parse_overrides(quote_list_overrides([*cfg.common, *cfg.sweeps[sweep]]))
    return cfg, [list(job) for job in BasicSweeper.split_arguments(parsed, max_batch_size=None)[0]]


@pytest.mark.parametrize("study,sweep,overrides,stage1", [
    ("tools", "grid", ["~benchmarks.mcq", "~benchmarks.qa"], ["~baselines.bm25", "~baselines.dense"]),
    ("tools", "probe_model", ["~benchmarks.standard", "~benchmarks.realistic", "~baselines.bm25", "~baselines.dense",
                              "benchmarks.mcq.limit=120", "benchmarks.qa.limit=120",
                              "probe.modes=[token,control,card,options]"], ["probe.modes=[token]"]),
    ("cpu", "retention", ["benchmarks.mcq.limit=32", "benchmarks.qa.limit=32", "~benchmarks.standard",
                          "~benchmarks.realistic", "~baselines.bm25", "~baselines.dense"], []),
    ("replication", "grid", ["~benchmarks.mcq", "~benchmarks.qa"], ["~baselines.bm25", "~baselines.dense"]),
])
def test_each_sweep_evaluates_with_the_overrides_it_always_had(study, sweep, overrides, stage1):
    _, jobs = _jobs(study, sweep)
    cfg = to_config(TrainConfig, compose("train", jobs[0]))
    assert cfg.evaluate.overrides == overrides and cfg.evaluate.stage_overrides["stage1"] == stage1


@pytest.mark.slow
def test_archived_runs_are_still_finished_under_the_shipped_study_configs():
    """Every grid / appendix_e run in the committed study=tools archive (docs/reports/reproduction_tools_results.tar.xz)
    hashes, under today's configs, to the config_sha256 of its done.json: a rerun restores and skips it."""
    archive = ROOT / "docs" / "reports" / "reproduction_tools_results.tar.xz"
    assert archive.is_file(), f"{archive} is shipped with the repo (a moved archive must not turn this test into a skip)"
    with tarfile.open(archive) as tar:
        done = {n: json.load(tar.extractfile(n)).get("config_sha256")
                for n in tar.getnames() if n.endswith("/done.json")}
    checked = 0
    for sweep in ("grid", "appendix_e"):
        _, jobs = _jobs("tools", sweep)
        for i, job in enumerate(jobs):
            name = next((n for n in done if n.split("/")[1] == sweep and n.split("/")[2].startswith(f"{i}_")), None)
            if name is None:
                continue
            identity = {k: v for k, v in to_plain(compose("train", job)).items() if k not in NOT_RESULT}
            assert _config_sha256(identity) == done[name], name
            checked += 1
    assert checked >= 4


def test_the_archived_untrained_evaluation_is_still_finished(tmp_path):
    """study=tools' probe_ceiling ran as ``evaluate.py``; run now as ``python -m toolsense.jobs.evaluate``, its
    archived done.json (the overrides' hash) still says it finished, so a rerun skips it."""
    from toolsense.study.sweeps import evaluation_finished, sweep_command

    archive = ROOT / "docs" / "reports" / "reproduction_tools_results.tar.xz"
    assert archive.is_file(), f"{archive} is shipped with the repo (a moved archive must not turn this test into a skip)"
    with tarfile.open(archive) as tar:
        tar.extract("reproduce_tools/probe_ceiling/done.json", tmp_path, filter="data")
    cfg, _ = _jobs("tools", "grid")
    cmd = sweep_command(cfg, "probe_ceiling")
    assert cmd[1:3] == ["-m", "toolsense.jobs.evaluate"]
    assert evaluation_finished(tmp_path / "reproduce_tools" / "probe_ceiling", cmd)
