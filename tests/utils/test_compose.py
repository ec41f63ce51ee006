"""One compose for every caller, over the configs inside the package; the evaluation after training
is typed and checked before training."""

from __future__ import annotations

import pytest

from toolsense.utils.compose import compose, conf_dir


def test_train_takes_the_evaluation_typed_and_refuses_what_evaluate_py_does_not_take(tmp_path):
    """evaluate.* selects YAML options, leaves labels out and sets evaluate.py values, each typed on
    train.py's own command line (no quoting, no override strings); each error names its field."""
    from toolsense.pipeline import evaluation_plan
    from toolsense.training import TrainConfig, register_configs
    from toolsense.utils.config import to_config

    register_configs()
    cfg = to_config(TrainConfig, compose("train", [
        "evaluate.benchmarks.rrb=rrb_sample", "evaluate.baselines.bm25=bm25", "evaluate.decoding=beam10",
        "evaluate.settings.metrics.resamples=100", "evaluate.stages=[stage1,stage2]",
        "evaluate.stage1.skip=[bm25]", "evaluate.stage1.settings.probe.modes=[token]"]))
    assert cfg.evaluate.benchmarks == {"rrb": "rrb_sample"} and cfg.evaluate.settings == {"metrics": {"resamples": 100}}
    stage1, stage2 = evaluation_plan(cfg, tmp_path)
    assert sorted(stage2.baseline_sections()) == ["bm25"] and stage1.baseline_sections() == {}
    assert stage1.decoding.beam_width == stage2.decoding.beam_width == 10 and stage2.metrics.resamples == 100
    assert stage1.probe.modes == ["token"] and stage2.probe.modes != ["token"]
    assert stage2.benchmark_sections()["rrb"].path.endswith("samples/rrb_sample.jsonl") and stage2.benchmark_sections()["rrb"].is_sample
    bad = {"evaluate.settings: .*limt": ["evaluate.suite=demo", "evaluate.settings.benchmarks.mcq.limt=3"],
           r"evaluate.stage1.skip: .mcqq. is not among the benchmarks / baselines / systems": [
               "evaluate.suite=demo", "evaluate.stages=[stage1,stage2]", "evaluate.stage1.skip=[mcqq]"],
           r"evaluate.stage1 is set, but stage1 is not in evaluate.stages": ["evaluate.suite=demo", "evaluate.stage1.skip=[mcq]"]}
    for message, overrides in bad.items():
        with pytest.raises(ValueError, match=message):
            evaluation_plan(to_config(TrainConfig, compose("train", overrides)), tmp_path)
    with pytest.raises(Exception, match="suite/nope"):  # Hydra names the missing option and lists the others
        evaluation_plan(to_config(TrainConfig, compose("train", ["evaluate.suite=nope"])), tmp_path)


def test_the_plan_composes_each_evaluation_once_with_its_stage_and_folder(tmp_path):
    """pipeline.evaluation_plan: stage2 into <run>/eval, stage1 into <run>/eval/stage1 with its own
    overrides after the common ones, then the drift; the leakage refusal reads these same configs."""
    from toolsense.evaluation.leakage import scored_query_sets
    from toolsense.pipeline import evaluation_plan
    from toolsense.training import TrainConfig, register_configs
    from toolsense.utils.config import to_config

    register_configs()
    cfg = to_config(TrainConfig, compose("train", [
        "evaluate.suite=demo", "evaluate.stages=[stage1,stage2]", "evaluate.settings.benchmarks.standard.limit=5",
        "evaluate.stage1.skip=[mcq,qa]", "evaluate.drift=true"]))
    stage1, stage2, drift = evaluation_plan(cfg, tmp_path)
    assert (stage1.stage, stage1.output_dir, stage1.run) == ("stage1", str(tmp_path / "eval" / "stage1"), str(tmp_path))
    assert sorted(stage1.benchmark_sections()) == ["realistic", "standard"]
    assert sorted(stage2.benchmark_sections()) == ["mcq", "qa", "realistic", "standard"]
    assert stage2.output_dir == str(tmp_path / "eval") and stage2.benchmark_sections()["standard"].limit == 5
    assert (str(drift.task), drift.output_dir) == ("drift", str(tmp_path / "eval" / "drift"))
    scored = scored_query_sets([stage1, stage2, drift])
    assert sorted(q.name for q in scored) == ["benchmarks.realistic", "benchmarks.standard"]
    assert len(next(q for q in scored if q.name == "benchmarks.standard").queries) == 5
    assert evaluation_plan(to_config(TrainConfig, compose("train", [])), tmp_path) == []


def test_the_configs_live_inside_the_package():
    import toolsense

    assert conf_dir().parent.resolve() == __import__("pathlib").Path(toolsense.__file__).parent.resolve()
    assert (conf_dir() / "evaluate.yaml").is_file() and (conf_dir() / "study" / "replication.yaml").is_file()
