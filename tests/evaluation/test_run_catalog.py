"""Issue 45 item 1: ``evaluate.py run=<dir> catalog=...`` used to rank the run's own tools while results.json recorded
the catalog passed, and ``catalog.path=/nonexistent.jsonl`` exited 0. A catalog beside run= is now used (it holds
exactly the run's tools) or refused naming both; results.json records the catalog that was ranked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from toolsense.catalog.loaders import DEMO_DIR
from toolsense.evaluation.runner import run

NINE_TOOLS = Path(__file__).resolve().parents[1] / "assets" / "training" / "tools.jsonl"


def _cfg(run_dir, out, **extra):
    return {"run": str(run_dir), "device": "cpu", "parametric": True, "output_dir": str(out),
            "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 2}},
            "baselines": {"bm25": {"kind": "bm25"}}, "decoding": {"beam_width": 5, "batch_size": 2},
            "metrics": {"ks": [1, 5], "resamples": 10}, "probe": {"modes": []}, **extra}


@pytest.fixture
def file_run(tiny_run, tmp_path):
    """tiny_run trained on the demo catalog read from its file (catalog.path=<demo tools.jsonl>), not path: null."""
    rd = tmp_path / "file_run"
    rd.mkdir()
    for name in ("index.json", "stage1", "stage2"):
        (rd / name).symlink_to(tiny_run / name)
    cfg = OmegaConf.load(tiny_run / "config.yaml")
    cfg.catalog.path = str(DEMO_DIR / "tools.jsonl")
    OmegaConf.save(cfg, rd / "config.yaml")
    return rd


def test_a_catalog_other_than_the_runs_is_refused_naming_both(tiny_run, tmp_path):
    with pytest.raises(ValueError) as e:
        run(_cfg(tiny_run, tmp_path / "out", catalog={"path": str(NINE_TOOLS)}))
    msg = str(e.value)
    assert f"catalog: {NINE_TOOLS} (9 tools) is not the catalog of run {tiny_run}" in msg
    assert f"{tiny_run / 'config.yaml'}: catalog.path=null (the demo catalog)" in msg and "0 tools only in catalog=" in msg
    assert not (tmp_path / "out" / "results.json").exists() and not (tmp_path / "out" / "realistic").exists()


def test_a_missing_catalog_path_beside_run_is_refused_naming_it(tiny_run, tmp_path):
    from toolsense.evaluation.config import compose_evaluate

    cfg = compose_evaluate([f"run={tiny_run}", "catalog.path=/nonexistent.jsonl"])  # a field alone: on the demo's section
    assert cfg.catalog.path == "/nonexistent.jsonl" and cfg.catalog.format == "auto"
    assert compose_evaluate([f"run={tiny_run}"]).catalog is None  # none given: the run's own
    with pytest.raises(FileNotFoundError, match="/nonexistent.jsonl: no such file"):
        run(_cfg(tiny_run, tmp_path / "out", catalog={"path": "/nonexistent.jsonl"}))


def test_the_catalog_ranked_is_the_one_recorded(file_run, tmp_path):
    """No catalog=: the run's own, recorded; catalog=demo (the same tools, another section): used and recorded."""
    own = run(_cfg(file_run, tmp_path / "own"))
    assert own["config"]["catalog"]["path"] == str(DEMO_DIR / "tools.jsonl")
    given = run(_cfg(file_run, tmp_path / "given", catalog={"path": None}))
    saved = json.loads((tmp_path / "given" / "results.json").read_text())
    assert saved["config"]["catalog"]["path"] is None and given["results"][1]["config"]["catalog"]["path"] is None
    assert [r["system"] for r in given["results"]] == ["tiny_random:stage2", "bm25"]
    assert given["results"][1]["metrics"]["Rc@5"] == own["results"][1]["metrics"]["Rc@5"]
