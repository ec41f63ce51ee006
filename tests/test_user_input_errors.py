"""Refusals of user input found while a job runs (issue 49): values that only the data, the catalog, the
output folder or the environment can refuse. Each is a user error now (they were bare ``ValueError``s: a
traceback and exit 1): one line naming the field, the file or the folder, exit 2, nothing written, and no
model loaded first.

The jobs run in this process (their ``main()``), from an empty working directory; inputs live beside it."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from tests.training.conftest import ASSETS, TINY
from toolsense.utils.hydra import DEBUG_ENV

TRAIN = [o for o in TINY if not o.startswith("stage1.max_steps")] + ["experiment=tg", "stage1.max_steps=1"]
QUERIES = ASSETS / "queries.jsonl"


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    for var in (DEBUG_ENV, "HYDRA_FULL_ERROR"):
        monkeypatch.setenv(var, "")
    monkeypatch.setenv("WANDB_MODE", "disabled")


@pytest.fixture
def inputs(tmp_path) -> Path:
    """A folder beside the working directory for the test's own input files."""
    d = tmp_path.parent / f"{tmp_path.name}_in"
    d.mkdir()
    return d


@pytest.fixture(autouse=True)
def no_model(monkeypatch):
    """A refusal must come before any model loads."""
    import toolsense.training.stage as stage

    def refuse(*_, **__):
        raise AssertionError("a model was loaded before the refusal")

    monkeypatch.setattr(stage, "load_model_and_tokenizer", refuse)


def _refused(monkeypatch, tmp_path, capfd, job: str, *args: str) -> str:
    """``<job>.py *args`` from the empty ``tmp_path``: asserts exit 2, one line, nothing written; the line."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [f"{job}.py", *args])
    with pytest.raises(SystemExit) as done:
        importlib.import_module(f"toolsense.jobs.{job}").main()
    err = capfd.readouterr().err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert done.value.code == 2 and "Traceback" not in err, err[-3000:]
    assert len(lines) == 1 and lines[0].startswith(f"{job}.py: error: "), err[-3000:]
    assert list(tmp_path.iterdir()) == []
    return lines[0].removeprefix(f"{job}.py: error: ")


def test_a_batch_that_does_not_divide(monkeypatch, tmp_path, capfd):
    line = _refused(monkeypatch, tmp_path, capfd, "train", *TRAIN, "trainer.effective_batch=6", "trainer.per_device_batch=4",
                    f"output_dir={tmp_path / 'run'}")
    assert line.startswith("trainer.effective_batch=6 is not a multiple of trainer.per_device_batch=4 x world_size=1")


def test_stage2_training_on_the_evaluated_queries(monkeypatch, tmp_path, capfd):
    line = _refused(monkeypatch, tmp_path, capfd, "train", *TRAIN, "stage2.sources.0.split=null",
                    "evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={QUERIES}",
                    f"output_dir={tmp_path / 'run'}")
    assert line.startswith(f"Stage 2 would train on queries the run is evaluated on: stage2.sources.0 ({QUERIES}) shares ")


def test_a_stage2_query_naming_a_tool_not_in_the_catalog_names_its_file(monkeypatch, tmp_path, capfd, inputs):
    rows = [json.loads(x) for x in QUERIES.read_text().splitlines()]
    rows[0]["tools"] = [*rows[0]["tools"], "Nowhere&&api"]
    (inputs / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = _refused(monkeypatch, tmp_path, capfd, "train", *TRAIN, f"stage2.sources.0.path={inputs / 'q.jsonl'}",
                    f"output_dir={tmp_path / 'run'}")
    assert line == (f"stage2.sources.0 ({inputs / 'q.jsonl'}): query {rows[0]['query_id']!r} names a tool not in the "
                    "catalog ('Nowhere&&api'); set stage2.on_unknown_tool=skip to drop such tools")


def test_a_bad_value_in_the_evaluation_after_training(monkeypatch, tmp_path, capfd):
    line = _refused(monkeypatch, tmp_path, capfd, "train", *TRAIN, "stage2.sources.0.split=train",
                    "evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={QUERIES}",
                    "evaluate.settings.benchmarks.generated.split=test", "evaluate.settings.metrics.seed=-5",
                    f"output_dir={tmp_path / 'run'}")
    assert line == "evaluate.settings: metrics.seed=-5: must be >= 0 (a random seed: numpy takes 0 to 2**32 - 1)"


def test_a_run_folder_that_trained_under_another_config(monkeypatch, tmp_path, capfd, inputs):
    run = inputs / "run"
    (run / "stage1").mkdir(parents=True)
    (run / "stage1" / "config.json").write_text("{}")
    (run / "config.yaml").write_text("trainer:\n  seed: 1234\n")
    line = _refused(monkeypatch, tmp_path, capfd, "train", *TRAIN, f"output_dir={run}")
    assert line.startswith(f"{run / 'config.yaml'} holds a different config (")
    assert line.endswith("differ); it has trained stage1 under it: use a new output_dir")
    assert (run / "config.yaml").read_text() == "trainer:\n  seed: 1234\n"


def test_a_pool_larger_than_the_catalog(monkeypatch, tmp_path, capfd):
    line = _refused(monkeypatch, tmp_path, capfd, "generate", "tasks=[rrb]", "pool_k=100000", f"output_dir={tmp_path / 'gen'}")
    assert line.startswith("pool_k=100000: the catalog holds only ") and line.endswith("(a pool is the anchor + pool_k others)")


def test_a_benchmark_that_needs_its_released_file(monkeypatch, tmp_path, capfd):
    line = _refused(monkeypatch, tmp_path, capfd, "evaluate", "parametric=false", "baseline=bm25", "benchmark=rrb",
                    f"output_dir={tmp_path / 'eval'}")
    assert line.startswith("benchmark.path is required: point it at the released rrb.jsonl")


def test_compare_without_roots(monkeypatch, tmp_path, capfd):
    line = _refused(monkeypatch, tmp_path, capfd, "compare", f"output_dir={tmp_path / 'cmp'}")
    assert line == "python compare.py needs roots=[<dir>, ...] (sweep or run directories)"


def test_an_unknown_busy_policy(monkeypatch, tmp_path, capfd):
    monkeypatch.setenv("TOOLSENSE_BUSY", "later")
    line = _refused(monkeypatch, tmp_path, capfd, "generate", "tasks=[rrb]", f"output_dir={tmp_path / 'gen'}")
    assert line == "TOOLSENSE_BUSY='later': choose from ['fail', 'skip', 'wait']"
