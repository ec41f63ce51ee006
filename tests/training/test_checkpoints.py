"""Resuming picks the newest complete checkpoint: a folder left by a kill mid-save is skipped."""

from __future__ import annotations

import pytest

from toolsense.training.stage import last_checkpoint
from toolsense.training.trainer import ROWS_FILE


def _ckpt(root, step, *files):
    import torch

    path = root / f"checkpoint-{step}"
    path.mkdir(parents=True)
    for f in files:
        if f.endswith(".pt"):
            torch.save({}, path / f)  # files that read back (damaged_file checks them)
        else:
            (path / f).write_text("{}" if f.endswith(".json") else "x")
    return path


def test_newest_complete_checkpoint_wins(tmp_path, caplog):
    assert last_checkpoint(tmp_path / "absent") is None
    _ckpt(tmp_path, 2, "trainer_state.json", ROWS_FILE)
    _ckpt(tmp_path, 10, "trainer_state.json", ROWS_FILE)
    _ckpt(tmp_path, 12, "trainer_state.json")  # killed before the rows were written
    _ckpt(tmp_path, 14, "model.safetensors")  # killed before the trainer state
    (tmp_path / "checkpoint-9.tmp").mkdir()
    assert last_checkpoint(tmp_path, needs=(ROWS_FILE,)) == str(tmp_path / "checkpoint-10")  # numeric, not lexical order
    assert "checkpoint-12 is incomplete (no embedding_rows.pt)" in caplog.text
    assert last_checkpoint(tmp_path) == str(tmp_path / "checkpoint-12")  # full fine-tuning needs no rows file
    assert (tmp_path / "checkpoint-14").is_dir()  # skipped, never deleted


def test_no_complete_checkpoint_means_a_fresh_start(tmp_path):
    _ckpt(tmp_path, 4, "adapter_model.safetensors")
    assert last_checkpoint(tmp_path, needs=(ROWS_FILE,)) is None


def test_a_truncated_weights_file_is_named_in_the_error(tmp_path):
    """safetensors' own error names no file; loading a run's model folder names it."""
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    cfg = ModelConfig(name_or_path="tiny_random")
    model, tok = load_model_and_tokenizer(cfg)
    model.save_pretrained(tmp_path / "stage1")
    tok.save_pretrained(tmp_path / "stage1")
    weights = tmp_path / "stage1" / "model.safetensors"
    with open(weights, "r+b") as f:
        f.truncate(weights.stat().st_size // 2)
    with pytest.raises(OSError, match=rf"^{weights}: the model weights cannot be read \(.*\); the file is truncated or corrupt"):
        load_model_and_tokenizer(cfg, path=tmp_path / "stage1")


def test_a_checkpoint_cut_short_is_skipped_naming_the_file_and_the_previous_one_resumes(tmp_path, caplog):
    """Issue 49: a truncated checkpoint made resuming fail with safetensors' raw SafetensorError (no
    file named, no fallback); deleting the folder by hand worked. Now the newest intact one is used."""
    import torch
    from safetensors.torch import save_file

    for step in (2, 4):
        path = _ckpt(tmp_path, step, "trainer_state.json", ROWS_FILE)
        save_file({"w": torch.arange(1000, dtype=torch.float32)}, path / "model.safetensors")
        torch.save({"state": {0: torch.zeros(100)}}, path / "optimizer.pt")
    weights = tmp_path / "checkpoint-4" / "model.safetensors"
    assert last_checkpoint(tmp_path, needs=(ROWS_FILE,)) == str(tmp_path / "checkpoint-4")
    with open(weights, "r+b") as f:
        f.truncate(weights.stat().st_size - 100)
    assert last_checkpoint(tmp_path, needs=(ROWS_FILE,)) == str(tmp_path / "checkpoint-2")
    assert f"{tmp_path / 'checkpoint-4'} is damaged ({weights}: cut short (" in caplog.text
    assert "resuming from the previous intact checkpoint" in caplog.text
    optimizer = tmp_path / "checkpoint-2" / "optimizer.pt"  # a torch file cut short: its zip directory is gone
    optimizer.write_bytes(optimizer.read_bytes()[:-50])
    assert last_checkpoint(tmp_path, needs=(ROWS_FILE,)) is None
    assert f"{optimizer}: unreadable (BadZipFile" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-4"]  # skipped, never deleted
    state = _ckpt(tmp_path, 6, "trainer_state.json", ROWS_FILE) / "trainer_state.json"
    state.write_text('{"global_step": 6, "log_hist', encoding="utf-8")  # cut mid-write
    assert last_checkpoint(tmp_path, needs=(ROWS_FILE,)) is None and f"{state}: unreadable (JSONDecodeError" in caplog.text
