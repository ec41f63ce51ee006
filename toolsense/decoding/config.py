"""The decoding room's settings: how the model searches (``decoding.*``, :class:`DecodingConfig`)
and what happens to a query longer than the model can read (``query_length.*``,
:class:`QueryLengthConfig`). ``evaluate.py``'s schema (``evaluation/config.py``) holds them as its
``decoding`` and ``query_length`` sections; the :class:`~toolsense.decoding.retrieval.Retriever`
takes a :class:`DecodingConfig` itself. Imports no torch, so composing a config stays cheap."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from toolsense.utils.choices import StrEnum, choice
from toolsense.utils.config import Signed


class HeadPrecision(StrEnum):
    """How the LM head's logits are computed in the search (``decoding.head_precision``;
    ``head.fp32_head``); the logits come out in fp32 in every mode, so no bf16 rounding ties them."""

    auto = "auto"
    """tf32 on CUDA, fp32 elsewhere (:meth:`resolve`); the fingerprint records the resolved value, so a
    CPU evaluation keeps the identity it had when fp32 was the default."""
    fp32 = "fp32"
    """fp32 weights (a copy of a bf16 head), fp32 matmul: the reference."""
    tf32 = "tf32"
    """fp32 weights, TF32 tensor-core matmul on CUDA (inputs rounded to 10 mantissa bits, fp32
    accumulation); on a CPU the same as fp32."""
    bf16 = "bf16"
    """bf16 weights and hidden state, fp32 accumulation and output (``torch.mm(..., out_dtype=
    torch.float32)`` on CUDA; on a CPU the same products upcast): no fp32 copy of the head, half
    its memory traffic — the head is ~40% of decode time at 175k rows and B=50."""

    def resolve(self, device_type: str) -> "HeadPrecision":
        """The mode that runs on a device of ``device_type`` (``"cuda"``, ``"cpu"``, ...): ``auto`` becomes
        tf32 on CUDA and fp32 elsewhere; every other mode is itself."""
        if self is not HeadPrecision.auto:
            return self
        return HeadPrecision.tf32 if device_type == "cuda" else HeadPrecision.fp32


def check_batch_size(value, field: str = "decoding.batch_size"):
    """``value`` if it is a positive int or ``"auto"``; else a ValueError naming ``field``."""
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise ValueError(f"{field} must be a positive integer or auto (sized for the device: 8 on a CPU, by free "
                     f"memory on a GPU), got {value!r}")


@dataclass
class DecodingConfig:
    """How the model searches (``decoding=beam50|beam10``): exactly the fields the Retriever reads.
    What is computed from the rankings is ``metrics`` (evaluation/config.py)."""

    beam_width: int = 50
    """Beams per query (ToolGen evaluates with 50)."""
    batch_size: Union[int, str] = "auto"
    """Queries per batch (each carries beam_width beams after the prompt); ``auto``: 8 on a CPU, on a
    GPU sized by its free memory (``toolsense.decoding.batching``)."""
    free_form: bool = True
    """Also run the unconstrained search (needed for Rf and IS)."""
    fast_flat: bool = True
    """Flat indexes: constrained top-B from one prefill plus one decode step of the B candidates."""
    share_prefix: bool = True
    """Encode the prompts' common prefix (system prompt, chat template) once per batch."""
    max_new_tokens: Optional[int] = None
    """Free-form search length; None = the index depth + 1 (longer outputs cannot be tools)."""
    length_penalty: Signed = 1.0
    """Beam ranking of finished ids: summed log-prob / generated_length ** length_penalty (EOS
    counted), as Hugging Face's generate (default 1.0, as ToolGen ran it); 0.0 = the plain sum.
    Changes rankings only for variable-depth (clustered) indexes."""
    head_precision: HeadPrecision = HeadPrecision.auto
    """The LM head's matmul (:class:`HeadPrecision`): auto (tf32 on CUDA, fp32 elsewhere), fp32, or tf32 /
    bf16 inputs with fp32 accumulation (CUDA; faster)."""

    def __post_init__(self) -> None:
        self.head_precision = choice(HeadPrecision, self.head_precision, "decoding.head_precision")
        if self.beam_width < 1:
            raise ValueError(f"decoding.beam_width must be >= 1, got {self.beam_width}")
        check_batch_size(self.batch_size, "decoding.batch_size")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ValueError(f"decoding.max_new_tokens must be >= 1 or null, got {self.max_new_tokens}")
        if not math.isfinite(self.length_penalty):
            raise ValueError(f"decoding.length_penalty must be a finite number, got {self.length_penalty}")

    def identity(self, device_type: str = "cpu") -> dict[str, Any]:
        """The fingerprint's ``decoding`` on a device of ``device_type``: all but ``batch_size`` (fingerprint.py),
        with ``head_precision`` resolved there (:meth:`HeadPrecision.resolve`) and left out at fp32 (old folders
        resume)."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "batch_size"}
        out["head_precision"] = str(self.head_precision.resolve(device_type))
        return {k: v for k, v in out.items() if (k, v) != ("head_precision", "fp32")}


@dataclass
class QueryLengthConfig:
    """What evaluate.py does with a query whose prompt is longer than the model can read
    (``query_length.*``; ``decoding/length.py``)."""

    max_tokens: Optional[int] = None
    """Longest prompt (query in its template, in tokens) a query may make; None = the model's context
    (``max_position_embeddings``) less the tokens the search generates. A larger value is capped at that."""
    policy: Literal["refuse", "truncate"] = "refuse"
    """refuse: stop before any search, naming the benchmark and its longest queries; truncate: cut each
    over-long query's text to fit (counted in results.json as ``query_length``)."""

    def __post_init__(self) -> None:
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or self.max_tokens < 1):
            raise ValueError(f"query_length.max_tokens must be >= 1 or null, got {self.max_tokens!r}")
        if self.policy not in ("refuse", "truncate"):
            raise ValueError(f"query_length.policy must be 'refuse' or 'truncate', got {self.policy!r}")

    def identity(self, report: dict[str, Any]) -> dict[str, Any] | None:
        """What a truncation changed (for the fingerprint), None where no query was cut."""
        return {"policy": self.policy, "limit_tokens": report["limit_tokens"]} if report["truncated"] else None
