"""The model section of every config (``conf/model/*.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from toolsense.utils.choices import StrEnum, choice


class DType(StrEnum):
    auto = "auto"
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"


@dataclass
class ModelConfig:
    name_or_path: str = "smollm2_135m"
    """An embedded model (smollm2_135m | gemma3_270m | tiny_random), a local folder, or a
    Hugging Face hub id (needs hub access or a populated HF cache)."""
    dtype: DType = DType.auto
    """``auto``: bf16 on a GPU that supports it, fp32 on CPU."""
    eos_token: Optional[str] = None
    """The token that ends an assistant turn, explicitly per model (e.g. <|im_end|>,
    <end_of_turn>, <|eot_id|>); None keeps the tokenizer's eos_token."""
    chat_template: Optional[str] = None
    """A Jinja chat template that replaces the tokenizer's own (needed for base models without one)."""
    attn_implementation: Optional[str] = None
    """e.g. sdpa, flash_attention_2; None lets transformers choose."""
    trust_remote_code: bool = False
    cache_dir: Optional[str] = None
    """Where converted embedded models are cached; default $TOOLSENSE_CACHE or ~/.cache/toolsense."""

    def __post_init__(self) -> None:
        self.dtype = choice(DType, self.dtype, "model.dtype")
