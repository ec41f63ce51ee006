"""One compose for every caller, over the configs inside the package; list elements that are
overrides need no quotes; the evaluation after training is typed and checked before training."""

from __future__ import annotations

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from toolsense.utils.compose import check_overrides, compose, conf_dir, quote_list_overrides


@pytest.mark.parametrize("given,expected", [
    ("evaluate.overrides=[benchmark=rrb,baseline=bm25]", "evaluate.overrides=['benchmark=rrb','baseline=bm25']"),
    ("evaluate.stage_overrides.stage1=[~benchmarks.mcq, ~benchmarks.qa]",
     "evaluate.stage_overrides.stage1=['~benchmarks.mcq','~benchmarks.qa']"),
    ("evaluate.overrides=[probe.modes=[token,card],decoding=beam10]",
     "evaluate.overrides=['probe.modes=[token,card]','decoding=beam10']"),
    ("evaluate.overrides=['~benchmarks.mcq',benchmarks.qa.limit=3]",
     "evaluate.overrides=['~benchmarks.mcq','benchmarks.qa.limit=3']"),
    ("evaluate.overrides=[a=1],[b=2]", "evaluate.overrides=['a=1'],['b=2']"),  # a -m sweep over two lists
    ("evaluate.overrides=[a=it's]", "evaluate.overrides=['a=it\\'s']"),
    ("stage2.sources=[{kind:demo,split:train}]", "stage2.sources=[{kind:demo,split:train}]"),  # no override inside
    ("metrics.ks=[1,5]", "metrics.ks=[1,5]"),
    ("x=[+1,-2]", "x=[+1,-2]"),  # signed numbers stay numbers
    ("evaluate.overrides=[+probe.seed=3]", "evaluate.overrides=['+probe.seed=3']"),
    ("x=[a=1", "x=[a=1"),  # not closed: left for Hydra to name the error
    ("~evaluate.stage_overrides.stage1", "~evaluate.stage_overrides.stage1"),
])
def test_list_elements_that_are_overrides_get_quoted(given, expected):
    assert quote_list_overrides([given]) == [expected]


def test_the_documented_unquoted_list_parses_to_the_same_value_as_the_quoted_one():
    parser = OverridesParser.create()
    with pytest.raises(Exception, match="no viable alternative"):
        parser.parse_overrides(["evaluate.overrides=[benchmark=rrb,baseline=bm25]"])  # Hydra's grammar alone
    (bare,) = parser.parse_overrides(quote_list_overrides(["evaluate.overrides=[benchmark=rrb,baseline=bm25]"]))
    (quoted,) = parser.parse_overrides(["evaluate.overrides=['benchmark=rrb','baseline=bm25']"])
    assert bare.value() == quoted.value() == ["benchmark=rrb", "baseline=bm25"]


def test_train_takes_the_evaluation_as_unquoted_overrides_and_checks_each():
    from toolsense.training import TrainConfig, register_configs
    from toolsense.utils.config import to_config

    register_configs()
    cfg = to_config(TrainConfig, compose("train", [
        "evaluate.overrides=[benchmark=rrb,baseline=bm25]", "evaluate.stages=[stage1,stage2]",
        "evaluate.stage_overrides.stage1=[~benchmarks.mcq,probe.modes=[token]]"]))
    assert cfg.evaluate.overrides == ["benchmark=rrb", "baseline=bm25"]
    assert cfg.evaluate.stage_overrides == {"stage1": ["~benchmarks.mcq", "probe.modes=[token]"], "stage2": []}
    with pytest.raises(ValueError, match=r"evaluate.overrides\[1\]='decoding=\[' is not one override"):
        to_config(TrainConfig, compose("train", ["evaluate.overrides=['benchmark=rrb','decoding=[']"]))
    with pytest.raises(ValueError, match=r"evaluate.stage_overrides.stage2\[0\]='a b' is not one override"):
        check_overrides(["a b"], "evaluate.stage_overrides.stage2")


def test_the_plan_composes_each_evaluation_once_with_its_stage_and_folder(tmp_path):
    """pipeline.evaluation_plan: stage2 into <run>/eval, stage1 into <run>/eval/stage1 with its own
    overrides after the common ones, then the drift; the leakage refusal reads these same configs."""
    from toolsense.evaluation.leakage import scored_query_sets
    from toolsense.pipeline import evaluation_plan
    from toolsense.training import TrainConfig, register_configs
    from toolsense.utils.config import to_config

    register_configs()
    cfg = to_config(TrainConfig, compose("train", [
        "evaluate.suite=demo", "evaluate.stages=[stage1,stage2]", "evaluate.overrides=[benchmarks.standard.limit=5]",
        "evaluate.stage_overrides.stage1=[~benchmarks.mcq,~benchmarks.qa]", "evaluate.drift=true"]))
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
