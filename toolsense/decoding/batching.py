"""How many queries one retrieval batch holds: ``decoding.batch_size`` as given, or under
``auto`` sized for the device — 8 on a CPU, and on a GPU by its free memory with the rule below.

The rule (:func:`auto_batch_size`) counts what one query of a batch holds at the search's peak:

* the next-token log-probs of its ``B`` beams over the vocabulary, in fp32, ``LOGIT_COPIES``
  at once (logits, log-softmax, the constrained mask's fill, the candidate scores of a step):
  ``4 x B x V x 4`` bytes — 140 MB at B=50 on Llama-3-8B with ToolBench's 46,984 tokens, by far
  the largest term;
* its KV cache: the prompt plus ``steps x B`` beam positions in tree mode (``steps`` <=
  ``beam.TREE_MAX_STEPS``), else ``B`` copies of prompt + steps;
* one layer's activations of the longer of its prompt and its ``B`` beam tokens
  (``4 x hidden + 2 x intermediate`` values each, in the model's dtype).

Of the device's free memory (``torch.cuda.mem_get_info`` plus what PyTorch's allocator holds
unused), less the LM head's fp32 copy (``head.fp32_head``), ``MEMORY_FRACTION`` is shared out:
``batch = fraction x (free - head) / per_query``, at least 1, at most ``AUTO_MAX``, rounded down to
a multiple of 8 from 8 up. Should a batch still run out of memory, the Retriever halves ``auto``'s
size and runs that batch again (a given ``batch_size`` is never changed). Not yet checked on a
GPU: ``benchmarks/gpu_check.py`` prints the size ``auto`` picks beside the measured peak."""

from __future__ import annotations

import torch

AUTO_CPU = 8
"""``auto`` off a GPU: the CPU gains nothing from larger batches (its matmuls are already wide)."""
AUTO_MAX = 128
"""``auto``'s ceiling: past it a batch's prompts differ more in length (more padding) and the
search's Python-side bookkeeping per batch is already amortised."""
MEMORY_FRACTION = 0.5
"""The share of the free device memory ``auto`` plans to fill: the rest absorbs the allocator's
fragmentation, transient copies the rule does not count, and other processes."""
LOGIT_COPIES = 4


def _text_config(model):
    cfg = model.config
    return cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg


def bytes_per_query(model, n_tokens: int, beam_width: int, prompt_tokens: int, steps: int) -> int:
    """Device bytes one query of a batch holds at the search's peak (see the module doc)."""
    from toolsense.decoding.beam import TREE_MAX_STEPS

    cfg = _text_config(model)
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    width = next(model.parameters()).element_size()
    kv_per_token = cfg.num_hidden_layers * 2 * kv_heads * head_dim * width
    kv_tokens = prompt_tokens + steps * beam_width if steps <= TREE_MAX_STEPS else (beam_width + 1) * (prompt_tokens + steps)
    inter = getattr(cfg, "intermediate_size", None) or 4 * cfg.hidden_size
    activations = max(prompt_tokens, beam_width) * (4 * cfg.hidden_size + 2 * inter) * width
    return LOGIT_COPIES * beam_width * n_tokens * 4 + kv_per_token * kv_tokens + activations


def free_device_bytes(device: torch.device) -> int:
    """What a new allocation on ``device`` can use: the driver's free memory plus the memory
    PyTorch's caching allocator holds but does not use."""
    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def auto_batch_size(model, n_tokens: int, beam_width: int, prompt_tokens: int, steps: int,
                    free_bytes: int | None = None) -> int:
    """The batch ``decoding.batch_size=auto`` runs: :data:`AUTO_CPU` off a GPU, else the module
    doc's rule. ``free_bytes`` overrides the measured free memory (tests, planning)."""
    device = next(model.parameters()).device
    if device.type != "cuda" and free_bytes is None:
        return AUTO_CPU
    free = free_device_bytes(device) if free_bytes is None else free_bytes
    head = model.get_output_embeddings()
    hidden = _text_config(model).hidden_size
    head_copy = n_tokens * hidden * 4 if head is not None and head.weight.dtype != torch.float32 else 0
    per = bytes_per_query(model, n_tokens, beam_width, prompt_tokens, steps)
    size = int(MEMORY_FRACTION * max(free - head_copy, 0) // per)
    size = min(max(size, 1), AUTO_MAX)
    return size - size % 8 if size >= 8 else size


OUT_OF_MEMORY_MESSAGES = ("CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
                          "CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate")
"""What a device allocation failure says when it arrives as a plain ``RuntimeError``: PyTorch raises
``torch.cuda.OutOfMemoryError`` only from its caching allocator; cuBLAS failing to allocate its
workspace or handle (``cublasCreate`` fails this way when the device is full) and raw CUDA
allocation errors come as ``RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling ...")``
(torch/csrc's ``TORCH_CUDABLAS_CHECK`` / ``C10_CUDA_CHECK``)."""


def is_out_of_memory(error: BaseException) -> bool:
    """True for ``torch.cuda.OutOfMemoryError`` and for a ``RuntimeError`` naming a CUDA / cuBLAS
    allocation failure (:data:`OUT_OF_MEMORY_MESSAGES`); any other error is not a memory error."""
    if isinstance(error, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and any(m in str(error) for m in OUT_OF_MEMORY_MESSAGES)
