"""Seeds of one configuration are one row: a real 2-configuration × 2-seed sweep on tiny_random,
through the Slurm launcher's machinery (submitit, local jobs), ends with a comparison whose cells
are the mean ± sd of each configuration's two runs' own results.json values, and with the plots."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from tests.training.conftest import ASSETS, ROOT, TINY
from tests.training.test_sweep import ENV


@pytest.mark.slow  # 4 jobs (~2 min): the sweep path is test_sweep's, seed averaging into one cell test_compare's
def test_seed_sweep_is_averaged_into_one_row(tmp_path):
    sweep = tmp_path / "sweep"
    evaluate = ["evaluate.benchmarks.generated=generated", f"evaluate.settings.benchmarks.generated.path={ASSETS / 'queries.jsonl'}",
                "evaluate.settings.benchmarks.generated.split=test", "evaluate.decoding=beam10", "evaluate.settings.metrics.resamples=100"]
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "experiment=tg,tg_3fm", "launcher=submitit_local",
           *[o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps"))], "stage1.max_steps=2",
           "stage2.max_steps=2", "trainer.seed=0,1", "stage2.sources.0.split=train", *evaluate,
           "hydra.callbacks.compare.metrics=[Rc@5,Rf@5,IS@5]",
           f"hydra.sweep.dir={sweep}"]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    comp = json.loads((sweep / "comparison.json").read_text())
    assert sorted(comp["rows"]) == ["tg-lora", "tg_3fm-lora"]
    assert len(list(sweep.glob("*/eval/generated/model/results.json"))) == 4
    for label in ("tg-lora", "tg_3fm-lora"):
        exp = label.split("-")[0]
        values = [json.loads(p.read_text())["metrics"]["Rc@5"]["value"]
                  for p in sorted(sweep.glob("*/eval/generated/model/results.json")) if p.parents[3].name.endswith(f"_{exp}-lora")]
        cell = comp["cells"][label]["generated Rc@5"]
        assert len(values) == 2 and cell["n_seeds"] == 2 and cell["value"] == pytest.approx(statistics.mean(values))
        assert cell["sd"] == pytest.approx(statistics.stdev(values))
        assert cell["lo"] <= cell["value"] <= cell["hi"]
    for plot in ("recall_by_benchmark", "is_by_configuration"):
        assert (sweep / f"comparison_{plot}.png").stat().st_size > 5000
