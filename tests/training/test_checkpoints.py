"""Resuming picks the newest complete checkpoint: a folder left by a kill mid-save is skipped."""

from __future__ import annotations

import pytest

from toolsense.training.stage import last_checkpoint
from toolsense.training.trainer import ROWS_FILE


def _ckpt(root, step, *files):
    path = root / f"checkpoint-{step}"
    path.mkdir(parents=True)
    for f in files:
        (path / f).write_text("x")
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
