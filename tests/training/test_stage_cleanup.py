"""A finished stage lets go of its model, optimizer and Trainer before the next stage loads (on
a GPU, Stage 1's weights, Adam states and DeepSpeed engine stayed resident through Stage 2)."""

from __future__ import annotations

import gc
import logging
import weakref

from tests.training.conftest import TINY, compose_train


def test_nothing_of_stage1_survives_its_run(tmp_path, caplog):
    from toolsense.catalog import load_catalog
    from toolsense.data.memorization import build_memorization_examples
    from toolsense.training import to_train_config
    from toolsense.training.runner import load_or_build_index
    from toolsense.training.stage import StageRunner

    cfg = to_train_config(compose_train([*TINY, "experiment=tg", "stage1.max_steps=1", f"output_dir={tmp_path}"]))
    catalog = load_catalog(cfg.catalog.path)
    index = load_or_build_index(cfg, catalog, tmp_path)
    runner = StageRunner("stage1", cfg, cfg.stage1, index, build_memorization_examples(catalog, index, cfg.memorization), tmp_path)
    with caplog.at_level(logging.INFO, logger="toolsense.training.stage"):
        runner.setup()
    plans = [r.getMessage() for r in caplog.records if "memory plan" in r.getMessage()]  # logged before the model loads
    assert len(plans) == 1 and plans[0].startswith("stage1: memory plan per device (ddp; "), plans
    refs = {"model": weakref.ref(runner.trainable.model), "trainer": weakref.ref(runner.trainer),
            "embedding": weakref.ref(runner.trainable.model.get_base_model().get_input_embeddings().weight)}
    runner.train()
    refs["optimizer"] = weakref.ref(runner.trainer.optimizer)
    runner.save()
    runner.cleanup()
    gc.collect()
    assert {k: r() is None for k, r in refs.items()} == {k: True for k in refs}
    assert (tmp_path / "stage1" / "config.json").is_file()


def test_a_deepspeed_stage_leaves_zero3_off_for_later_loads():
    """Accelerate's process-wide state keeps the last DeepSpeed config alive (its plugin holds
    the ``HfDeepSpeedConfig`` transformers' weak reference points at), so after a ZeRO-3 stage
    ``is_deepspeed_zero3_enabled()`` stayed true and every later ``from_pretrained`` (Stage 2,
    the evaluation's ``load_run``) ran under ``zero.Init`` and refused a ``device_map``. Here the
    state is held as Accelerate holds it; the stage cleanup's release lets it go."""
    from accelerate.state import AcceleratorState
    from transformers.integrations import HfDeepSpeedConfig
    from transformers.integrations.deepspeed import is_deepspeed_zero3_enabled

    from toolsense.training.trainer import release_deepspeed_state

    AcceleratorState._shared_state["deepspeed_plugins"] = HfDeepSpeedConfig({"zero_optimization": {"stage": 3}, "train_batch_size": 8})
    try:
        assert is_deepspeed_zero3_enabled()
        release_deepspeed_state()
        assert not is_deepspeed_zero3_enabled() and "deepspeed_plugins" not in AcceleratorState._shared_state
    finally:
        release_deepspeed_state()
