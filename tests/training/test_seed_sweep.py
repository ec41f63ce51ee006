"""Seeds of one configuration are one row: a real trainer.seed=0,1 sweep on tiny_random ends with a
comparison whose cell is the mean ± sd of the two runs' own results.json values."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from tests.training.conftest import ASSETS, ROOT, TINY
from tests.training.test_sweep import ENV


def test_seed_sweep_is_averaged_into_one_row(tmp_path):
    sweep = tmp_path / "sweep"
    evaluate = (f'evaluate.overrides=["benchmark=generated","benchmark.path={ASSETS / "queries.jsonl"}",'
                '"decoding=beam10","decoding.resamples=100"]')
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "experiment=tg",
           *[o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps"))], "stage1.max_steps=2",
           "stage2.max_steps=2", "trainer.seed=0,1", evaluate, "hydra.callbacks.compare.metrics=[Rc@5,Rf@5,IS@5]",
           f"hydra.sweep.dir={sweep}"]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    comp = json.loads((sweep / "comparison.json").read_text())
    assert comp["rows"] == ["tg-lora"]
    values = [json.loads((sweep / run / "eval" / "generated" / "model" / "results.json").read_text())["metrics"]["Rc@5"]["value"]
              for run in ("0_tg-lora", "1_tg-lora")]
    cell = comp["cells"]["tg-lora"]["generated Rc@5"]
    assert cell["n_seeds"] == 2 and cell["value"] == pytest.approx(statistics.mean(values))
    assert cell["sd"] == pytest.approx(statistics.stdev(values))
    assert cell["lo"] <= cell["value"] <= cell["hi"]
    assert (sweep / "comparison.md").read_text().splitlines()[2].startswith("| tg-lora | ")
