"""study=paper: the paper-scale study composes (every sweep's first job converts to a TrainConfig), refuses to start
without ToolBench's Stage-2 training queries, refuses a Stage-2 file that holds queries its suite scores, and runs end
to end as a dry run (tiny_random, a tiny catalog slice, 2 steps a stage, a handful of queries, the local launcher)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser

from toolsense.catalog import load_catalog
from toolsense.study.config import StudyConfig, register_configs
from toolsense.study.run import run_study
from toolsense.study.sweeps import sweep_command
from toolsense.utils.compose import conf_dir
from toolsense.utils.config import to_config

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".." / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "released" / "rrb_dev.jsonl").is_file() or not (DATA / "toolbench_queries").is_dir(),
                                reason="../shared/data (released/, toolbench_queries/) absent")


def _compose(name: str, overrides: list[str]):
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            return compose(config_name=name, overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def _study(*overrides: str) -> StudyConfig:
    register_configs()
    return to_config(StudyConfig, _compose("reproduce", ["study=paper", *overrides]))


def test_paper_study_refuses_to_start_without_toolbench_training_queries(tmp_path):
    """Refused by run_study before anything is written or submitted (the config itself composes: docs show it)."""
    root = f"root={tmp_path / 'paper'}"
    with pytest.raises(ValueError, match=r"inputs.toolbench_train.path is required \(ToolBench's Stage-2 training queries.*"
                                         r"set inputs.toolbench_train.path=<file or glob>"):
        run_study(_study(root))
    with pytest.raises(FileNotFoundError, match=r"inputs.toolbench_train.path='.*nope/\*.json' matches no file"):
        run_study(_study(root, f"inputs.toolbench_train.path={tmp_path}/nope/*.json"))
    assert not (tmp_path / "paper").exists()
    assert _study(root, "train=false").inputs["toolbench_train"].path is None  # a report rebuild needs no training input


def _first_jobs(cfg: StudyConfig) -> dict:
    """The first job of each sweep of ``cfg``, composed as train.py would (with its Hydra section) and converted to
    TrainConfig: (typed config, hydra launcher section)."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    from toolsense.training import TrainConfig
    from toolsense.training import register_configs as train_configs

    train_configs()
    seen = {}
    for name in cfg.sweeps:
        parsed = OverridesParser.create().parse_overrides(sweep_command(cfg, name)[4:-1])
        first = BasicSweeper.split_arguments(parsed, max_batch_size=None)[0][0]
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
                dc = compose(config_name="train", overrides=list(first), return_hydra_config=True)
                HydraConfig.instance().set_config(dc)
                launcher = dc.hydra.launcher
                with open_dict(dc):
                    del dc["hydra"]
                seen[name] = (to_config(TrainConfig, dc), launcher)
        finally:
            GlobalHydra.instance().clear()
    return seen


def test_every_sweep_of_the_paper_study_composes_to_a_train_config(tmp_path):
    """The first job of each sweep (common + the sweep's own + Slurm launcher), composed as train.py would, converts
    to TrainConfig: the paper's catalog, models, DeepSpeed, suite and launcher; App. E on the realistic templates."""
    (tmp_path / "train.json").write_text("[]")
    cfg = _study(f"inputs.toolbench_train.path={tmp_path}/train.json")
    assert list(cfg.sweeps) == ["grid", "appendix_e", "architecture"] and cfg.launch[0] == "launcher=slurm_gpu"
    seen = _first_jobs(cfg)
    for _, launcher in seen.values():
        # issue 44: one rank per GPU of the node, ranks from Slurm (no setup line pins RANK=0 WORLD_SIZE=1)
        assert launcher._target_.endswith("RankedSlurmLauncher") and launcher.gpus_per_node == launcher.tasks_per_node == 8
        assert not any("RANK" in line or "WORLD_SIZE" in line for line in launcher.setup)
    grid = seen["grid"][0]
    assert grid.model.name_or_path == "meta-llama/Meta-Llama-3-8B-Instruct" and grid.catalog.build == "toolbench"
    assert grid.trainer.deepspeed["zero_optimization"]["stage"] == 2 and grid.trainer.effective_batch == 1024
    assert [(s.kind, s.path) for s in grid.stage2.sources] == [("toolbench", f"{tmp_path}/train.json")]
    assert grid.evaluate.suite == "paper" and grid.evaluate.stages == ["stage1", "stage2"] and grid.evaluate.drift
    assert [(s.kind, s.path) for s in seen["appendix_e"][0].stage2.sources] == [("realistic_template", grid.catalog.path)]
    assert seen["architecture"][0].model.name_or_path == "Qwen/Qwen3-4B-Instruct-2507"
    from toolsense.evaluation.config import register_configs as evaluate_configs

    evaluate_configs()  # evaluate.yaml's schema: this test composes it itself, whatever ran before
    suite = _compose("evaluate", ["catalog=toolbench", "suite=paper"])
    assert suite.decoding.beam_width == 50 and set(suite.benchmarks) == {"standard", "G2", "G3", "realistic", "mcq", "qa"}
    assert suite.baselines.te3l.encoder == "text-embedding-3-large" and suite.probe.modes == ["token", "control", "card"]


def test_the_cut_tools_study_composes_in_epochs_with_app_e_on_realistic_templates():
    register_configs()
    cfg = to_config(StudyConfig, _compose("reproduce", ["study=tools"]))
    assert list(cfg.sweeps) == ["grid", "appendix_e", "probe_model"] and list(cfg.evaluations) == ["probe_ceiling"]
    assert cfg.archive == "docs/reports/reproduction_tools_results.tar.xz" and not cfg.launch
    seen = {k: v[0] for k, v in _first_jobs(cfg).items()}
    grid, app_e, qwen = seen["grid"], seen["appendix_e"], seen["probe_model"]
    assert (grid.stage1.epochs, grid.stage1.max_steps, grid.stage2.epochs) == (1.0, -1, 1.0)
    assert [(s.kind, s.split) for s in grid.stage2.sources] == [("verbose", "train")]
    assert [(s.kind, s.path) for s in app_e.stage2.sources] == [("realistic_template", grid.catalog.path)]
    assert qwen.stage1.epochs == qwen.stage2.epochs == 2.0
    assert qwen.evaluate.settings["probe"]["modes"] == ["token", "control", "card", "options"]
    assert qwen.catalog.build == "study_probe_tools_120" and qwen.trainer.per_device_batch == 4
    from toolsense.catalog.study_tools import PROBE_ITEMS  # the catalog holds the tools of exactly the items scored

    assert {b: qwen.evaluate.settings["benchmarks"][b]["limit"] for b in ("mcq", "qa")} == {"mcq": PROBE_ITEMS, "qa": PROBE_ITEMS}
    assert "experiment=tg,tg_3fm" in sweep_command(cfg, "probe_model")  # finding 5's formats half, one run per worker
    assert qwen.evaluate.stage1.settings == {"probe": {"modes": ["token"]}} and qwen.evaluate.stages == ["stage1", "stage2"]
    assert qwen.evaluate.skip == ["standard", "realistic", "bm25", "dense"] and qwen.evaluate.stage1.skip == []


def _tool_record(t) -> str:
    return json.dumps({"tool_name": t.raw_name or t.name, "tool_title": t.tool_title, "tool_description": t.tool_description,
                       "api_title": t.api_title, "api_description": t.api_description})


def _slice(tmp_path: Path) -> tuple[Path, Path]:
    """A catalog slice holding the tools of the first 2 queries of G1, G2, G3 (their api_lists), of the first 2
    released RRB items and of the first 4 MCQ / QA items; and a ToolBench-format "training" file of 6 queries
    written here (not ToolBench's) on the first G3 item's tools."""
    lines: dict[str, str] = {}
    for f in ("G1_instruction", "G2_instruction", "G3_instruction"):
        items = json.loads((DATA / "toolbench_queries" / f"{f}.json").read_text())[:2]
        part = tmp_path / f"{f}.head.json"
        part.write_text(json.dumps(items))
        lines.update({t.name: _tool_record(t) for t in load_catalog(part)})
    release = {t.name: t for t in load_catalog(DATA / "catalogs" / "toolsense_release.jsonl")}
    wanted = set()
    for f, n in (("rrb_dev", 2), ("mcq_dev", 4), ("qa_dev", 4)):
        for line in (DATA / "released" / f"{f}.jsonl").read_text().splitlines()[:n]:
            item = json.loads(line)
            tools = item.get("tool") if isinstance(item.get("tool"), list) else [item.get("tool")]
            wanted |= {t["tool_name"] if isinstance(t, dict) else t for t in tools}
    lines.update({n: _tool_record(t) for n, t in release.items() if t.raw_name in wanted or n in wanted})
    catalog = tmp_path / "catalog_slice.jsonl"
    catalog.write_text("".join(v + "\n" for v in lines.values()))
    g3 = json.loads((DATA / "toolbench_queries" / "G3_instruction.json").read_text())[0]
    train = [{**g3, "query_id": f"dry-{i}", "query": f"Dry-run training request number {i} for the first tool set."} for i in range(6)]
    path = tmp_path / "toolbench_train.json"
    path.write_text(json.dumps(train))
    return catalog, path


DRY = ["only=[grid]", "launch=['launcher=local']", "workers=1", "resamples=50"]


def _dry_extra(catalog: Path) -> str:
    evals = [*(f"evaluate.settings.benchmarks.{b}.limit=2" for b in ("standard", "G2", "G3", "realistic")),
             "evaluate.settings.benchmarks.mcq.limit=4", "evaluate.settings.benchmarks.qa.limit=4",
             "evaluate.settings.decoding.beam_width=5", "evaluate.settings.metrics.ks=[1,5]", "evaluate.skip=[dense,te3l]"]
    extra = ["model=tiny_random", "trainer=cpu", "trainer.effective_batch=4", "trainer.max_length=96", f"catalog.path={catalog}",
             "experiment=tg", "tuning=lora", "stage1.max_steps=1", "stage2.max_steps=1", "stage2.max_queries=6",
             *evals, "evaluate.stage1.skip=[bm25]"]
    return "extra=[" + ",".join(repr(e) for e in extra) + "]"


def _reproduce(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOOLSENSE_CACHE": os.environ.get("TOOLSENSE_CACHE", "")}
    env = {k: v for k, v in env.items() if v}
    cmd = [sys.executable, str(ROOT / "reproduce.py"), "study=paper", f"root={tmp_path / 'paper'}", f"report={tmp_path / 'paper.md'}",
           f"plots_dir={tmp_path / 'img'}", f"archive={tmp_path / 'paper.tar.xz'}", *extra]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)


@needs_data
def test_paper_study_dry_run_trains_evaluates_and_reports(tmp_path):
    catalog, train = _slice(tmp_path)
    proc = _reproduce(tmp_path, f"inputs.toolbench_train.path={train}", *DRY, _dry_extra(catalog))
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = tmp_path / "paper" / "grid" / "0_tg-lora"
    cfg = (run / "config.yaml").read_text()
    assert "name_or_path: tiny_random" in cfg and "kind: toolbench" in cfg
    ev = run / "eval"
    for bench in ("standard", "G2", "G3", "realistic"):
        res = json.loads((ev / bench / "model" / "results.json").read_text())
        assert res["n_items"] == 2 if "n_items" in res else True
        assert (ev / bench / "model" / "samples.jsonl").read_text().count("\n") == 2
    assert (ev / "mcq" / "card" / "results.json").is_file() and (ev / "stage1" / "qa" / "token" / "results.json").is_file()
    assert (ev / "standard" / "bm25" / "results.json").is_file() and not (ev / "stage1" / "standard" / "bm25").exists()
    assert (run / "done.json").is_file() and (ev / "drift" / "drift.json").is_file()
    report = (tmp_path / "paper.md").read_text()
    assert all(f"\n| {n} | " in report for n in range(1, 8))
    import tarfile

    with tarfile.open(tmp_path / "paper.tar.xz") as tar:
        names = tar.getnames()
        text = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert "paper/grid/0_tg-lora/done.json" in names and not [n for n in names if n.endswith(".safetensors")]
    assert (str(ROOT) + "/").encode() not in text and str(Path.home()).encode() not in text  # portable paths only


@needs_data
def test_paper_study_refuses_a_stage2_file_holding_scored_queries(tmp_path):
    """ToolBench's G1 test file as "training" queries: train.py refuses before it claims the run, naming the
    source, the benchmark and the count; nothing is trained."""
    catalog, _ = _slice(tmp_path)
    g1 = DATA / "toolbench_queries" / "G1_instruction.json"
    proc = _reproduce(tmp_path, f"inputs.toolbench_train.path={g1}", *DRY, _dry_extra(catalog))
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    assert "Stage 2 would train on queries the run is evaluated on" in err
    assert "stage2.sources.0" in err and "G1_instruction.json" in err and "benchmarks.standard" in err
    assert not list((tmp_path / "paper" / "grid").glob("*/stage1"))
