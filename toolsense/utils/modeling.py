"""Facts about a Hugging Face causal LM that several rooms need (index, training, evaluation)."""

from __future__ import annotations


def embeddings_tied(model) -> bool:
    """Whether the output embeddings (LM head) are the very tensor of the input embeddings: a
    tied model has one matrix to grow, train, save and measure drift on, not two."""
    out = model.get_output_embeddings()
    return out is not None and out.weight is model.get_input_embeddings().weight
