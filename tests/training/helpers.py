"""Small measurement helpers shared by the training tests (not library code)."""

from __future__ import annotations

import torch

from toolsense.data.examples import tokenize_example


@torch.no_grad()
def mean_completion_loss(model, tokenizer, examples, max_length: int = 1024) -> float:
    """Mean per-token NLL of the completions (the training objective), one example at a time."""
    model.eval()
    total, count = 0.0, 0
    for ex in examples:
        tok = tokenize_example(ex, tokenizer, max_length)
        ids = torch.tensor([tok["input_ids"]])
        labels = torch.tensor([[t if m else -100 for t, m in zip(tok["input_ids"], tok["completion_mask"])]])
        n = int((labels[:, 1:] != -100).sum())
        total += float(model(input_ids=ids, labels=labels).loss) * n
        count += n
    return total / count


@torch.no_grad()
def constrained_recall_at_1(model, tokenizer, queries, index, prompts, batch_size: int = 16) -> float:
    """Flat index, greedy constrained decoding: the first step may only emit a tool token (then
    EOS is forced), so the prediction is the argmax of the next-token logits over the tool tokens."""
    from toolsense.data.prompts import render_prompt, retrieval_messages

    model.eval()
    names = list(index.paths)
    ids = torch.tensor(tokenizer.convert_tokens_to_ids([index.paths[n][0] for n in names]))
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    hits = 0
    try:
        for start in range(0, len(queries), batch_size):
            chunk = queries[start : start + batch_size]
            texts = [render_prompt(tokenizer, retrieval_messages(q.text, prompts)) for q in chunk]
            inp = tokenizer(texts, add_special_tokens=False, return_tensors="pt", padding=True)
            logits = model(**inp).logits[:, -1]
            best = logits[:, ids].argmax(dim=1).tolist()
            hits += sum(names[b] in q.tools for b, q in zip(best, chunk))
    finally:
        tokenizer.padding_side = side
    return hits / len(queries)
