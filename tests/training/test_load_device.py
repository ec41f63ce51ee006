"""A stage loads its model straight onto this rank's GPU (``device_map``), not into host memory:
the wiring checked on a CPU with CUDA reported present (the load itself is test_cuda_step.py's)."""

from __future__ import annotations

import pytest
import torch

from toolsense.models import ModelConfig
from toolsense.training.config import TrainerConfig
from toolsense.training.trainer import load_device


class Stop(Exception):
    pass


@pytest.fixture
def cuda_rank3(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("LOCAL_RANK", "3")


def test_load_device_is_this_ranks_gpu(cuda_rank3):
    assert load_device(TrainerConfig()) == "cuda:3"
    assert load_device(TrainerConfig(use_cpu=True)) is None
    assert load_device(TrainerConfig(deepspeed={"zero_optimization": {"stage": 2}})) == "cuda:3"
    # transformers refuses a device_map under ZeRO-3 ("DeepSpeed Zero-3 is not compatible with passing a device_map")
    assert load_device(TrainerConfig(deepspeed={"zero_optimization": {"stage": 3}})) is None


def test_load_device_is_the_host_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert load_device(TrainerConfig()) is None


def test_a_cuda_load_streams_the_weights_to_the_device(cuda_rank3, monkeypatch):
    import toolsense.models.loading as loading

    seen = {}

    def capture(auto_cls, src, kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(loading, "_from_pretrained", capture)
    with pytest.raises(Stop):
        loading.load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"), device="cuda:3")
    assert seen["device_map"] == "cuda:3" and seen["dtype"] == torch.float32
    seen.clear()
    with pytest.raises(Stop):
        loading.load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))
    assert "device_map" not in seen


@pytest.mark.parametrize("tuning,dtype", [("lora", "bfloat16"), ("full", "float32")])
def test_stage_setup_loads_onto_the_rank_gpu(cuda_rank3, monkeypatch, tmp_path, tuning, dtype):
    """LoRA's frozen base in bf16 (what trains is made fp32 after), full fine-tuning's fp32 master weights."""
    import toolsense.training.stage as stage
    from tests.training.conftest import TINY, compose_train
    from toolsense.catalog import load_catalog
    from toolsense.index import build_index
    from toolsense.training import to_train_config

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    cfg = to_train_config(compose_train([*TINY, "experiment=tg", "trainer=gpu", f"tuning={tuning}", "model.dtype=auto",
                                                  f"output_dir={tmp_path}"]))
    seen = {}

    def capture(model_cfg, path=None, device=None):
        seen.update(dtype=model_cfg.dtype, device=device)
        raise Stop

    monkeypatch.setattr(stage, "load_model_and_tokenizer", capture)
    runner = stage.StageRunner("stage1", cfg, cfg.stage1, build_index(load_catalog(cfg.catalog.path), "flat"), [], tmp_path)
    with pytest.raises(Stop):
        runner.setup()
    assert seen == {"dtype": dtype, "device": "cuda:3"}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_stage_model_is_on_the_gpu_before_the_trainer_moves_it(monkeypatch, tmp_path):
    import toolsense.training.stage as stage
    from tests.training.conftest import TINY, compose_train
    from toolsense.catalog import load_catalog
    from toolsense.index import build_index
    from toolsense.training import to_train_config

    cfg = to_train_config(compose_train([*TINY, "experiment=tg", "trainer=gpu", "model.dtype=auto", f"output_dir={tmp_path}"]))
    seen = {}
    load = stage.load_model_and_tokenizer

    def spy(*a, **kw):
        model, tok = load(*a, **kw)
        seen["device"], seen["dtype"] = next(model.parameters()).device.type, next(model.parameters()).dtype
        return model, tok

    monkeypatch.setattr(stage, "load_model_and_tokenizer", spy)
    from toolsense.data.memorization import build_memorization_examples

    catalog = load_catalog(cfg.catalog.path)
    index = build_index(catalog, "flat")
    runner = stage.StageRunner("stage1", cfg, cfg.stage1, index, build_memorization_examples(catalog, index, cfg.memorization), tmp_path)
    runner.setup()
    assert seen == {"device": "cuda", "dtype": torch.bfloat16}  # LoRA: the frozen base in bf16 ...
    named = dict(runner.trainable.model.named_parameters())
    assert {p.dtype for p in named.values() if p.requires_grad} == {torch.float32}  # ... what trains in fp32
    runner.cleanup()


def test_zero3_host_load_says_what_host_memory_it_needs(cuda_rank3, caplog, monkeypatch):
    """ZeRO-3 cannot stream to the GPU (no device_map): the host-memory cost is said, not silent,
    once per node (local rank 0) and process, not once per stage on every rank."""
    from toolsense.training.trainer import _warn_zero3_host_load

    zero3 = TrainerConfig(deepspeed={"zero_optimization": {"stage": 3}})
    _warn_zero3_host_load.cache_clear()
    with caplog.at_level("WARNING", logger="toolsense.training.trainer"):
        assert load_device(zero3) is None  # local rank 3: silent
    assert caplog.text == ""
    monkeypatch.setenv("LOCAL_RANK", "0")
    with caplog.at_level("WARNING", logger="toolsense.training.trainer"):
        assert load_device(zero3) is None and load_device(zero3) is None  # Stage 1, then Stage 2
    assert caplog.text.count("ranks x 2 bytes x parameters") == 1
    monkeypatch.setenv("LOCAL_RANK", "3")
    caplog.clear()
    with caplog.at_level("WARNING", logger="toolsense.training.trainer"):
        assert load_device(TrainerConfig(deepspeed={"zero_optimization": {"stage": 2}})) == "cuda:3"
    assert caplog.text == ""
