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
    assert "<|im_start|>assistant" in tok.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False, add_generation_prompt=True)
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
