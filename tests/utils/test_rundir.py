"""RunDir: the one reader and writer of a training run directory."""

from __future__ import annotations

import pytest

from toolsense.catalog.config import CatalogConfig
from toolsense.models import ModelConfig
from toolsense.utils.rundir import RunDir


def test_write_read_sections_label_and_refusal(tmp_path):
    rd = RunDir(tmp_path / "run")
    data = {"experiment": "tg_3fm", "tuning": {"method": "lora"}, "model": {"name_or_path": "tiny_random", "old": 1},
            "output_dir": "a", "catalog": {"path": None}}
    rd.write_config(data, ignore=("output_dir",))
    assert rd.config() == data and rd.label() == "tg_3fm-lora"
    assert rd.section("model", ModelConfig).name_or_path == "tiny_random"  # the unknown "old" key is ignored
    assert isinstance(rd.section("catalog", CatalogConfig), CatalogConfig)
    rd.write_config({**data, "output_dir": "b"}, ignore=("output_dir",))  # a rerun elsewhere: accepted
    (tmp_path / "run" / "metrics.jsonl").write_text('{"step": 1}\n')  # something was trained under the config
    with pytest.raises(ValueError, match=r"holds a different config \(model.name_or_path, model.old differ\); it has trained "
                                         r"metrics.jsonl under it"):
        rd.write_config({**data, "model": {"name_or_path": "other"}}, ignore=("output_dir",))
    cfg = rd.config()
    cfg["experiment"] = "mutated"
    assert rd.config()["experiment"] == "tg_3fm"  # callers get a copy of the cached file


def test_a_folder_where_nothing_was_produced_is_reclaimed(tmp_path):
    """A start that failed before training (config.yaml and perhaps index.json written) does not
    lock the folder: the corrected config replaces it, and the stale index goes."""
    rd = RunDir(tmp_path / "run")
    first = {"trainer": {"effective_batch": 5, "per_device_batch": 2}, "stage1": {"learning_rate": 1e-3}}
    rd.write_config(first)
    rd.index_path.write_text("{}")
    (rd.path / "checkpoints" / "stage1").mkdir(parents=True)  # folders without a file are nothing produced
    fixed = {"trainer": {"effective_batch": 4, "per_device_batch": 2}, "stage1": {"learning_rate": 1e-3}}
    rd.write_config(fixed)
    assert rd.config() == fixed and not rd.index_path.exists()
    (rd.path / "checkpoints" / "stage1" / "checkpoint-2").mkdir()
    (rd.path / "checkpoints" / "stage1" / "checkpoint-2" / "trainer_state.json").write_text("{}")
    with pytest.raises(ValueError, match=r"\(trainer.effective_batch differ\); it has trained checkpoints under it"):
        rd.write_config(first)


def test_changes_name_dotted_fields_and_a_new_key_at_its_default_is_none():
    from toolsense.utils.identity import changes

    old = {"stage1": {"learning_rate": 1e-3, "epochs": 1}, "trainer": {"seed": 0}, "memorization": {"formats": ["desc2tok"]}}
    new = {"stage1": {"learning_rate": 2e-3, "epochs": 1}, "trainer": {"seed": 0, "extra": {"a": 1}},
           "memorization": {"formats": ["desc2tok", "mcts"]}}
    assert changes(old, new) == ["memorization.formats.1", "stage1.learning_rate", "trainer.extra.a"]
    assert changes(old, new, defaults={"trainer.extra", "trainer.extra.a"}) == ["memorization.formats.1", "stage1.learning_rate"]
    assert changes(new, old, defaults={"trainer.extra.a"}) == ["memorization.formats.1", "stage1.learning_rate", "trainer.extra.a"]
    assert changes(old, old) == []


def test_require_names_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.yaml: no such file"):
        RunDir(tmp_path).require()
    rd = RunDir(tmp_path)
    rd.write_config({"experiment": "tg"})
    with pytest.raises(FileNotFoundError, match="no model folder for stage 'stage2'"):
        rd.require("stage2")
    (tmp_path / "stage2").mkdir()
    (tmp_path / "stage2" / "config.json").write_text("{}")
    assert rd.require("stage2").stage("stage2") == tmp_path / "stage2"
    assert RunDir(tmp_path / "nope").label() == "nope"


def test_bad_section_value_names_the_file_and_field(tmp_path):
    rd = RunDir(tmp_path)
    rd.write_config({"catalog": {"format": "parquet"}})
    with pytest.raises(ValueError, match=r"config.yaml: catalog"):
        rd.section("catalog", CatalogConfig)


def test_claim_holds_the_run_against_another_process_and_is_released_when_it_dies(tmp_path):
    import subprocess
    import sys
    import textwrap

    rd = RunDir(tmp_path / "run")
    holder = textwrap.dedent(f"""
        import sys, time
        from toolsense.utils.rundir import RunDir
        with RunDir({str(rd.path)!r}).claim() as held:
            print(held, flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "True"
        with rd.claim() as held:
            assert held is False  # the other process trains into it
    finally:
        proc.kill()  # kill -9: the OS drops its lock
        proc.wait()
    with rd.claim() as held:
        assert held is True
        with RunDir(rd.path).claim() as again:  # flock is per open file: a second claim in one process is refused too
            assert again is False


def test_finished_holds_for_the_config_it_was_marked_under_only(tmp_path):
    rd = RunDir(tmp_path / "run")
    cfg = {"experiment": "tg", "evaluate": {"suite": "demo", "drift": True}}
    assert not rd.finished(cfg)
    rd.mark_finished(cfg)
    later = {**cfg, "evaluate": {**cfg["evaluate"], "added": 3}}  # a field a later version adds
    assert rd.finished(later, defaults={"evaluate.added"}) and not rd.finished(later)
    rd.done_path.unlink()
    assert not rd.finished(cfg)
    rd.mark_finished(cfg)
    assert rd.finished({"evaluate": {"drift": True, "suite": "demo"}, "experiment": "tg"})  # key order is not identity
    assert not rd.finished({**cfg, "evaluate": {"suite": "demo", "drift": False}})  # another evaluation: not done
    rd.done_path.write_text('{"config_sha256": "ab')  # torn by a kill mid-write (the write is atomic; a copy may not be)
    assert not rd.finished(cfg)


def test_a_refusal_names_what_the_holder_is_doing_not_what_the_refused_would_do(tmp_path, monkeypatch):
    """Issue 49: train.py holding a run was described to evaluate.py as "evaluating" (the refused
    process's own work). The refusal is a user error (one line, exit 2)."""
    from toolsense.utils.errors import UserError
    from toolsense.utils.rundir import RunDir, holding

    monkeypatch.delenv("TOOLSENSE_BUSY", raising=False)
    with RunDir(tmp_path).claim(doing="training") as held:
        assert held
        with pytest.raises(UserError, match=rf"^{tmp_path}: another process is training into this folder \(pid \d+ on "):
            with holding(tmp_path, "evaluating"):
                pass


def test_a_folder_made_for_a_refused_job_is_removed(tmp_path):
    """A user error inside ``holding`` before anything was written leaves no folder (nor its .lock)."""
    from toolsense.utils.errors import ConfigError
    from toolsense.utils.rundir import holding

    out = tmp_path / "out"
    with pytest.raises(ConfigError):
        with holding(out, "evaluating"):
            raise ConfigError("metrics.seed=-5: must be >= 0")
    assert not out.exists()
    (out / "kept").mkdir(parents=True)
    with pytest.raises(ConfigError):
        with holding(out, "evaluating"):
            raise ConfigError("x")
    assert sorted(p.name for p in out.iterdir()) == [".lock", "kept"]  # a folder that held something stays
