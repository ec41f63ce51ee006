"""Every tensor built for a model is made on that model's device. A CPU box has one real device,
so the model goes to ``meta`` (shapes, no data) and a function mode refuses any op whose tensor
arguments sit on two devices — the CUDA error ``add_index_tokens`` raised for the untrained
baseline (indices built on the CPU against weights already on the GPU)."""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from toolsense.catalog import Catalog, Tool
from toolsense.index import add_index_tokens, build_index


class OneDevice(TorchFunctionMode):
    """Raise when an op mixes devices (0-dim CPU tensors excepted: CUDA accepts those as scalars)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        devices = {t.device for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)
                   and not (t.device.type == "cpu" and t.dim() == 0)}
        if len(devices) > 1:
            raise RuntimeError(f"{getattr(func, '__name__', func)} mixes devices {sorted(map(str, devices))}")
        return func(*args, **kwargs)


def _catalog(n: int = 9) -> Catalog:
    tools = [Tool.from_name(f"Svc{i % 3}&&api_{i}", api_description=f"operation {i}") for i in range(n)]
    return Catalog.from_tools((t, f"mem:{i}") for i, t in enumerate(tools))


def test_the_checker_catches_a_cpu_index_against_meta_weights():
    w = torch.empty(10, 4, device="meta")
    with OneDevice(), pytest.raises(RuntimeError, match="mixes devices"):
        torch.nn.functional.embedding_bag(torch.tensor([1, 2]), w, torch.tensor([0]), mode="mean")


@pytest.mark.parametrize("builder", ["flat", "structural"])
def test_add_index_tokens_builds_its_tensors_on_the_model_device(tiny_model_dir, builder):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    cfg = AutoConfig.from_pretrained(tiny_model_dir)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    n_old = len(tok)
    index = build_index(_catalog(), builder)
    with OneDevice():
        ids = add_index_tokens(index, model, tok)
    emb = model.get_input_embeddings().weight
    assert emb.device.type == "meta" and emb.shape[0] % 64 == 0 and emb.shape[0] >= len(tok) == n_old + len(index.tokens())
    assert ids == list(range(n_old, n_old + len(index.tokens())))
