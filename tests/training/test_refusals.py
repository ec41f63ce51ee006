"""train.py refuses a bad run before it claims its folder or loads a model, naming the dotted
field or the file; a failed start leaves nothing that would refuse the corrected command."""

from __future__ import annotations

import json
import sys

import pytest

from tests.training.conftest import ASSETS, ROOT, TINY, compose_train
from toolsense.training import to_train_config

RUN = [o for o in TINY if not o.startswith("stage1.max_steps")] + ["experiment=tg", "stage2.enabled=false", "stage1.max_steps=1"]


def _train(monkeypatch, tmp_path, overrides: list[str]):
    """The real train.py entry point in this process (Hydra's own dir under tmp_path); returns its
    exit error (SystemExit from Hydra's error report) or None."""
    import runpy

    monkeypatch.setattr(sys, "argv", [str(ROOT / "train.py"), *overrides, f"hydra.run.dir={tmp_path / 'hydra'}"])
    try:
        runpy.run_path(str(ROOT / "train.py"), run_name="__main__")
    except SystemExit as e:
        return e
    return None


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if any model loads (a refusal must come before)."""
    import toolsense.training.stage as stage

    def refuse(*_, **__):
        raise AssertionError("a model was loaded before the bad value was refused")

    monkeypatch.setattr(stage, "load_model_and_tokenizer", refuse)


@pytest.mark.parametrize("override, message", [
    ("stage1.learning_rate=-1", r"stage1.learning_rate must be > 0, got -1"),
    ("stage2.learning_rate=0", r"stage2.learning_rate must be > 0, got 0"),
    ("stage1.max_steps=0", r"stage1.max_steps must be >= 1, or -1 to size the stage by stage1.epochs; got 0"),
    ("stage2.max_steps=-5", r"stage2.max_steps must be >= 1, or -1 .*got -5"),
    ("stage1.epochs=0", r"stage1.epochs must be > 0"),
    ("stage2.epochs=-1", r"stage2.epochs must be > 0"),
    ("stage1.warmup_ratio=-0.1", r"stage1.warmup_ratio must be in \[0, 1\)"),
    ("stage2.warmup_ratio=1.5", r"stage2.warmup_ratio must be in \[0, 1\)"),
    ("trainer.per_device_batch=0", r"trainer.per_device_batch must be >= 1, got 0"),
    ("trainer.effective_batch=-16", r"trainer.effective_batch must be >= 1, got -16"),
    ("trainer.max_grad_norm=-1", r"trainer.max_grad_norm must be >= 0"),
    ("trainer.save_total_limit=0", r"trainer.save_total_limit must be >= 1"),
    ("tuning.dropout=1.0", r"tuning.dropout must be in \[0, 1\)"),
    ("tuning.alpha=0", r"tuning.alpha must be > 0"),
    ("stage2.max_queries=0", r"stage2.max_queries must be >= 1, or -1"),
    ("+memorization.format_epochs={desc2tok:0}", r"memorization.format_epochs.desc2tok must be > 0"),
    ("+memorization.format_epochs={mcts:2}", r"memorization.format_epochs.mcts: 'mcts' is not in memorization.formats"),
])
def test_bad_training_values_name_the_field(override, message):
    with pytest.raises(ValueError, match=rf"^{message}"):
        to_train_config(compose_train([*TINY, override]))


def test_refused_through_train_py_before_the_folder_or_a_model(monkeypatch, tmp_path, no_model, capsys):
    out = tmp_path / "run"
    err = _train(monkeypatch, tmp_path, [*RUN, "stage1.learning_rate=-1", f"output_dir={out}"])
    assert err is not None and err.code != 0
    assert "stage1.learning_rate must be > 0, got -1" in capsys.readouterr().err
    assert not out.exists()


def test_a_failed_start_does_not_lock_out_the_corrected_command(monkeypatch, tmp_path, capsys):
    """The batch plan is checked before the folder is claimed: nothing is written, and the
    corrected command trains into the same folder."""
    out = tmp_path / "run"
    err = _train(monkeypatch, tmp_path, [*RUN, "trainer.effective_batch=5", "trainer.per_device_batch=2", f"output_dir={out}"])
    assert err is not None and "trainer.effective_batch=5 is not a multiple of trainer.per_device_batch=2" in capsys.readouterr().err
    assert not (out / "config.yaml").exists()
    assert _train(monkeypatch, tmp_path, [*RUN, "trainer.effective_batch=4", "trainer.per_device_batch=2", f"output_dir={out}"]) is None
    assert (out / "stage1" / "config.json").is_file()
    summary = [json.loads(line)["summary"] for line in (out / "metrics.jsonl").read_text().splitlines() if "summary" in line][-1]
    assert summary["stage1"]["global_step"] == 1


@pytest.mark.parametrize("text", ["", "\n \n\n"])
def test_an_empty_catalog_is_refused_naming_the_file(monkeypatch, tmp_path, no_model, capsys, text):
    (tmp_path / "tools.jsonl").write_text(text)
    out = tmp_path / "run"
    err = _train(monkeypatch, tmp_path, [*RUN, f"catalog.path={tmp_path / 'tools.jsonl'}", f"output_dir={out}"])
    assert err is not None and f"{tmp_path / 'tools.jsonl'}: the catalog holds no tools" in capsys.readouterr().err
    assert not out.exists()


def test_stage2_on_scored_queries_is_refused_naming_files_and_count(monkeypatch, tmp_path, no_model, capsys):
    """Training on every query of a file and scoring its test split: the 3 test queries leak."""
    queries = ASSETS / "queries.jsonl"
    out = tmp_path / "run"
    evaluate = ["evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={queries}",
                "evaluate.settings.benchmarks.generated.split=test"]
    leaky = [o for o in TINY if not o.startswith("stage1.max_steps")] + ["experiment=tg", *evaluate, f"output_dir={out}"]
    err = _train(monkeypatch, tmp_path, leaky)
    msg = capsys.readouterr().err
    assert err is not None and not out.exists()
    assert f"stage2.sources.0 ({queries}) shares 3 queries with benchmarks.generated ({queries})" in msg
    # the same query in another file, reworded only in case and punctuation, is the same query
    copy = tmp_path / "copy.jsonl"
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    test = [r for r in rows if r["split"] == "test"]
    copy.write_text("".join(json.dumps({**r, "query_id": f"other-{i}", "query": r["query"].upper() + " !!"}) + "\n"
                            for i, r in enumerate(test[:1])))
    err = _train(monkeypatch, tmp_path, [*leaky, f"stage2.sources.0.path={copy}"])
    assert err is not None and f"stage2.sources.0 ({copy}) shares 1 queries with benchmarks.generated" in capsys.readouterr().err


def test_toolbench_stage2_has_no_default_path():
    """conf/stage2/toolbench.yaml must not point at the G1 test queries by default."""
    from omegaconf import OmegaConf

    raw = OmegaConf.load(ROOT / "toolsense" / "conf" / "stage2" / "toolbench.yaml")
    assert OmegaConf.is_missing(raw.sources[0], "path")
    from toolsense.training import prepare

    with pytest.raises(ValueError, match=r"^stage2.sources.0.path is required for a 'toolbench' source: point it at a training"):
        prepare(to_train_config(compose_train(["stage2=toolbench"])))


def test_unknown_tools_skipped_are_counted_in_the_stage2_summary(tmp_path):
    """on_unknown_tool=skip: the summary says how many gold tools (and queries) it dropped."""
    from toolsense.training import run

    queries = tmp_path / "q.jsonl"
    rows = [json.loads(line) for line in (ASSETS / "queries.jsonl").read_text().splitlines()]
    rows[0]["tools"] = rows[0]["tools"] + ["Nowhere&&api"]  # one extra unknown gold tool: the query stays
    rows[1]["tools"] = ["Nowhere&&other"]  # only an unknown tool: the query goes
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = compose_train([o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps"))] + [
        "experiment=tg", "stage1.enabled=false", "stage2.max_steps=1", f"stage2.sources.0.path={queries}",
        "stage2.on_unknown_tool=skip", f"output_dir={tmp_path / 'run'}"])
    summary = run(cfg)
    assert summary["stage2"]["skipped_unknown_tools"] == {
        "tools": 2, "queries": 1, "sample": [f"{rows[0]['query_id']}: Nowhere&&api", f"{rows[1]['query_id']}: Nowhere&&other"]}
    with pytest.raises(ValueError, match=rf"stage2.sources.0 \(.*q.jsonl\): query '{rows[0]['query_id']}' names a tool not in the "
                                         r"catalog \('Nowhere&&api'\)"):
        run(compose_train([*TINY, "experiment=tg", f"stage2.sources.0.path={queries}", f"output_dir={tmp_path / 'run2'}"]))
    assert not (tmp_path / "run2").exists()  # refused before anything was written
