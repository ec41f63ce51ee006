"""Issue 45 item 2: killed in Stage 2, the Stage-2 file's labels rewritten at the same path, the rerun resumed and
exited 0 saying nothing: one run trained on two data sets. Each source's content is now recorded when the run starts
(``sources.json``) and checked on every rerun; a run folder from before says so once and goes on."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from tests.training.conftest import ASSETS, TINY, compose_train
from toolsense.training import run
from toolsense.training.data_identity import FILE


def _cfg(tmp_path, queries):
    over = [o for o in TINY if not o.startswith(("stage2.max_steps", "stage2.sources.0.path"))]
    return compose_train([*over, "experiment=tg", "stage1.enabled=false", "stage2.max_steps=1",
                          f"stage2.sources.0.path={queries}", f"output_dir={tmp_path / 'run'}"])


def test_a_source_rewritten_between_kill_and_resume_is_refused(tmp_path, caplog):
    queries = tmp_path / "queries.jsonl"
    shutil.copy(ASSETS / "queries.jsonl", queries)
    out = tmp_path / "run"
    run(_cfg(tmp_path, queries))
    recorded = json.loads((out / FILE).read_text())
    assert set(recorded) == {"catalog", "stage2.sources.0"} and recorded["stage2.sources.0"]["n"] == 16
    shutil.rmtree(out / "stage2")  # killed in Stage 2 (its model folder not yet written)
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    rows[0]["tools"], rows[1]["tools"] = rows[1]["tools"], rows[0]["tools"]  # labels rewritten, same path, same count
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=rf"^stage2.sources.0 \({queries}\) differs from the data {out} trained on "
                                         r"\(16 records then, 16 now; sha256 \w{12} then, \w{12} now\): resuming would"):
        run(_cfg(tmp_path, queries))
    assert not (out / "stage2").exists()
    shutil.copy(ASSETS / "queries.jsonl", queries)  # restored: the resume trains Stage 2
    run(_cfg(tmp_path, queries))
    assert (out / "stage2" / "config.json").is_file()
    (out / FILE).unlink()  # a run folder from before the fingerprints
    with caplog.at_level(logging.WARNING, logger="toolsense.training.data_identity"):
        run(_cfg(tmp_path, queries))
        run(_cfg(tmp_path, queries))
    said = [r for r in caplog.records if "a run folder from before source fingerprints" in r.getMessage()]
    assert len(said) == 1 and json.loads((out / FILE).read_text()) == recorded
