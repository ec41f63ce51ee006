"""experiment=ablate_formats: the Stage-1 format ablation is one sweep (hydra.sweeper.params in
the experiment file) over every non-empty subset of desc2tok/tok2desc/mcts, ending in one
comparison; a 2-job miniature on tiny_random, evaluated after Stage 1 and Stage 2, gives one
row per subset with retention columns and plots computed from the runs' own files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from tests.training.conftest import ASSETS, ROOT, TINY, compose_train
from tests.training.test_sweep import ENV
from toolsense.training.config import to_train_config
from toolsense.utils.compose import compose


def test_sweep_parameters_are_every_subset_of_the_flat_formats():
    from toolsense.training import register_configs

    register_configs()
    cfg = compose("train", ["experiment=ablate_formats"], return_hydra_config=True)
    params = cfg.hydra.sweeper.params
    assert list(params) == ["memorization.formats"]
    (override,) = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()])
    subsets = [tuple(s) for s in override.sweep_iterator()]
    assert subsets == [("desc2tok",), ("tok2desc",), ("mcts",), ("tok2desc", "mcts"), ("desc2tok", "mcts"),
                       ("desc2tok", "tok2desc"), ("desc2tok", "tok2desc", "mcts")]
    assert cfg.index.builder == "flat" and cfg.evaluate.suite == "demo"
    for s in subsets:  # every job's config passes the format/index check
        to_train_config(compose_train(["experiment=ablate_formats", f"memorization.formats=[{','.join(s)}]"]))


def test_evaluate_stages_are_checked():
    with pytest.raises(ValueError, match=r"evaluate.stages must list stage1 and/or stage2, each once; got \['stage3'\]"):
        to_train_config(compose_train(["evaluate.stages=[stage3]"]))
    with pytest.raises(ValueError, match="evaluate.stages lists \\['stage1'\\], but stage1.enabled is false"):
        to_train_config(compose_train(["evaluate.stages=[stage1,stage2]", "stage1.enabled=false", "evaluate.suite=demo"]))


def test_two_job_ablation_sweep_compares_subsets_with_retention(tmp_path):
    sweep = tmp_path / "sweep"
    evaluate = ["evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={ASSETS / 'queries.jsonl'}",
                "evaluate.settings.benchmarks.generated.split=test", "evaluate.benchmarks.mcq=demo_mcq", "evaluate.decoding=beam10",
                "evaluate.settings.metrics.resamples=100", "evaluate.settings.probe.modes=[token]"]
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "experiment=ablate_formats",
           *[o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps"))], "stage1.max_steps=2",
           "stage2.max_steps=2", "memorization.formats=[desc2tok],[desc2tok,mcts]", "evaluate.suite=null", "stage2.sources.0.split=train",
           *evaluate,
           "evaluate.stages=[stage1,stage2]", "hydra.callbacks.compare.metrics=[Rc@10,Rf@10,IS@10]", f"hydra.sweep.dir={sweep}"]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    comp = json.loads((sweep / "comparison.json").read_text())
    one, two = "ablate_formats-lora (memorization.formats=desc2tok)", "ablate_formats-lora (memorization.formats=desc2tok+mcts)"
    assert comp["rows"] == [one, f"{one}:stage1", two, f"{two}:stage1"]
    for label, run in ((one, "0_ablate_formats-lora"), (two, "1_ablate_formats-lora")):
        acc = {st: json.loads((sweep / run / "eval" / sub / "mcq" / "token" / "results.json").read_text())["metrics"]["accuracy"]["value"]
               for st, sub in (("stage1", "stage1"), ("stage2", "."))}
        assert comp["cells"][label]["mcq token acc"]["value"] == acc["stage2"]
        assert comp["cells"][f"{label}:stage1"]["mcq token acc"]["value"] == acc["stage1"]
        ret = comp["cells"][label]["retention mcq token Δacc"]
        assert ret["value"] == pytest.approx(acc["stage2"] - acc["stage1"]) and ret["lo"] <= ret["value"] <= ret["hi"]
        res = json.loads((sweep / run / "eval" / "generated" / "model" / "results.json").read_text())
        cell = comp["cells"][label]["generated Rc@10"]  # one seed: the item-clustered cell is the run's own estimate
        want = res["metrics"]["Rc@10"]
        assert {k: cell[k] for k in ("value", "lo", "hi")} == {k: want[k] for k in ("value", "lo", "hi")}
        assert cell["n_items"] == res["n"] and cell.get("trivial") == want.get("trivial")  # k=10 over the 9 tools: flagged in both
    assert (sweep / "comparison.md").read_text().splitlines()[0].startswith(
        "| system | generated Rc@10 | generated Rf@10 | generated IS@10 | mcq token acc | retention mcq token Δacc |")
    assert sorted(p.name for p in sweep.glob("*.png")) == ["comparison_is_by_configuration.png", "comparison_probe_accuracy.png",
                                                          "comparison_recall_by_benchmark.png", "comparison_training_curves.png"]
    assert (sweep / "comparison.csv").read_text().count("\n") > 8
