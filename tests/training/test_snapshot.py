"""A stage's Trainer checkpoints exported as model folders (training/snapshot.py) and evaluated
(evaluate.py checkpoint=<N>): the export of the last checkpoint is the stage's own folder, an earlier
one is another model, and evaluate.py scores it under its own name and fingerprint."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.training.conftest import ASSETS, TINY, compose_train
from toolsense.training import run
from toolsense.training.snapshot import checkpoint_epoch, export_checkpoint


def _weights(folder):
    return load_file(str(folder / "model.safetensors"))


@pytest.fixture(scope="module")
def tiny_lora_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("snap") / "run"
    # 16 queries, 4 a step: Stage 2 takes 4 steps, a checkpoint at steps 2 and 4 (both kept)
    run(compose_train([*TINY, "experiment=tg", "tuning=lora", "tuning.r=4", "tuning.alpha=8", "stage1.max_steps=2",
                       "stage2.max_steps=-1", "stage2.epochs=1", "stage2.learning_rate=5e-2", "trainer.save_steps=2",
                       "trainer.save_total_limit=4", f"output_dir={out}"]))
    return out


def test_the_last_checkpoint_exports_to_the_stage_itself_and_an_earlier_one_differs(tiny_lora_run):
    ckpts = sorted(p.name for p in (tiny_lora_run / "checkpoints" / "stage2").glob("checkpoint-*"))
    assert ckpts == ["checkpoint-2", "checkpoint-4"]
    last = export_checkpoint(tiny_lora_run, "stage2", 4)
    assert last == tiny_lora_run / "snapshots" / "stage2-4" and not last.with_name("stage2-4.tmp").exists()
    final, exported = _weights(tiny_lora_run / "stage2"), _weights(last)
    assert final.keys() == exported.keys()
    for k in final:  # adapters and embedding rows put back and merged as the stage's own save does
        torch.testing.assert_close(exported[k], final[k], rtol=0, atol=1e-6)
    mid = _weights(export_checkpoint(tiny_lora_run, "stage2", 2))
    emb = next(k for k in final if "embed_tokens" in k)
    assert (mid[emb] - final[emb]).abs().max() > 1e-3  # two more steps at lr 5e-2 moved the rows
    stage1 = _weights(tiny_lora_run / "stage1")
    assert (mid[emb] - stage1[emb]).abs().max() > 1e-3  # and the first two moved them from Stage 1's
    assert checkpoint_epoch(tiny_lora_run / "checkpoints" / "stage2" / "checkpoint-2") == pytest.approx(0.5)
    again = export_checkpoint(tiny_lora_run, "stage2", 4)  # exists: returned as it is
    assert again == last


def test_a_missing_checkpoint_is_refused_naming_the_saved_ones(tiny_lora_run):
    with pytest.raises(FileNotFoundError, match=r"checkpoint-3: no complete checkpoint.*checkpoint-2', 'checkpoint-4'"):
        export_checkpoint(tiny_lora_run, "stage2", 3)


def test_evaluate_scores_a_checkpoint_under_its_own_name_and_fingerprint(tiny_lora_run, tmp_path):
    from toolsense.evaluation.config import EvaluateConfig, register_configs
    from toolsense.pipeline import evaluate  # evaluate.py's path: the checkpoint is exported, then evaluated
    from toolsense.utils.compose import compose
    from toolsense.utils.config import to_config

    register_configs()
    bench = ["benchmark=generated", f"benchmark.path={ASSETS / 'queries.jsonl'}",
             "benchmark.label=standard", "benchmark.split=null", "decoding.beam_width=4", "metrics.resamples=10"]

    def score(out, *extra):
        cfg = to_config(EvaluateConfig, compose("evaluate", [f"run={tiny_lora_run}", *bench, f"output_dir={out}", *extra]))
        evaluate(cfg, output_dir=out)
        return json.loads((out / "results.json").read_text())

    at2, at4 = score(tmp_path / "c2", "checkpoint=2"), score(tmp_path / "c4", "checkpoint=4")
    final = score(tmp_path / "final")
    [r2], [r4], [rf] = (r["results"] for r in (at2, at4, final))
    assert (r2["system"], r4["system"], rf["system"]) == ("tiny_random:stage2@2", "tiny_random:stage2@4", "tiny_random:stage2")
    assert r4["metrics"]["Rc@1"]["value"] == rf["metrics"]["Rc@1"]["value"]  # the last checkpoint is the stage
    assert "code" in at2  # the commit and uncommitted-diff hash of the code that scored it (None outside git)
    fp = json.loads(next((tmp_path / "c2").rglob("samples.fingerprint.json")).read_text())
    assert "checkpoint" in json.dumps(fp)
    with pytest.raises(ValueError, match=r"checkpoint=2: a Trainer checkpoint step .* of run="):
        to_config(EvaluateConfig, compose("evaluate", ["checkpoint=2"]))
