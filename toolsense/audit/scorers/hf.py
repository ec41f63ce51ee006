"""Score with a local Hugging Face causal LM (optionally + a LoRA adapter).

Two methods (``scorer.method``): ``generate`` decodes greedily and the prompt's parser reads the
text (unparseable answers are counted); ``answer_probs`` opens the assistant turn with the
parser's answer prefix (``<answer>``) and scores the expected answer value under the model's
distribution over the complete answers - a continuous score that ranks records even when the
greedy answer is the same for most of them.

``answer_probs`` and multi-token answers: each answer is its value tokens followed by the first
token of the closing tag (SmolLM2: "1" "</", "2" "</", ..., "1" "0" "</"). Its probability is the
product, along its tokens, of the model's next-token probability renormalized over the answers'
tokens allowed at that point - the probability of that answer under decoding constrained to the
answers. Where only one token is allowed (after "2", only "</") the factor is 1. So
P(10) = P("1") * P("0" | "1") / (P("0" | "1") + P("</" | "1")), P(1) the same with "</", and
P(d) = P(d) for d = 2..9, the first-step probabilities renormalized over "1".."9". The answers'
probabilities sum to one; the score is sum_v P(v) * (v - 1) / 9. Every branching point lies on
one path (prompt, prefix, "1"), so it costs one forward pass."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from toolsense.audit.prompting import ANSWER_CHOICES, AnswerChoices, AuditPromptConfig
from toolsense.audit.scorers.base import ScoreItem, ScorerConfig, sha256_files
from toolsense.models import ModelConfig, default_device, load_model_and_tokenizer, resolve_model_dir
from toolsense.utils.errors import ConfigError, MissingFile

TokenPath = tuple[int, ...]


@dataclass
class AnswerTrie:
    """The complete answers as token sequences after the prefix, and where they branch."""

    sequences: list[TokenPath]
    """Per answer (in ``choices.values`` order): value tokens + the first suffix token."""
    branches: dict[TokenPath, list[int]]
    """Token path after the prefix -> the distinct next tokens, for paths with two or more."""
    paths: list[TokenPath]
    """Branching paths that are no prefix of another: one forward pass each covers every branch."""


def answer_trie(tok, choices: AnswerChoices, model_name: str) -> AnswerTrie:
    """Tokenize every answer as the model would write it after ``choices.prefix``; a tokenizer
    that merges the prefix, value or suffix across their boundaries is an error naming both."""
    prefix = tok(choices.prefix, add_special_tokens=False)["input_ids"]
    seqs = []
    for text in choices.values:
        value = tok(choices.prefix + text, add_special_tokens=False)["input_ids"]
        full = tok(choices.prefix + text + choices.suffix, add_special_tokens=False)["input_ids"]
        if value[:len(prefix)] != prefix or full[:len(value)] != value or len(full) <= len(value) or len(value) == len(prefix):
            raise ConfigError(f"scorer.method=answer_probs: {model_name}'s tokenizer does not split "
                             f"{choices.prefix + text + choices.suffix!r} into prefix, value and suffix tokens")
        seqs.append(tuple(value[len(prefix):]) + (full[len(value)],))
    children: dict[TokenPath, set[int]] = {}
    for seq in seqs:
        for j in range(len(seq)):
            children.setdefault(seq[:j], set()).add(seq[j])
    branches = {node: sorted(kids) for node, kids in children.items() if len(kids) > 1}
    paths = [n for n in branches if not any(m != n and m[:len(n)] == n for m in branches)]
    return AnswerTrie(seqs, branches, sorted(paths))


class HFScorer:
    def __init__(self, cfg: ScorerConfig, model_cfg: ModelConfig, prompt: Optional[AuditPromptConfig] = None):
        src = Path(resolve_model_dir(model_cfg))
        weights = sorted(src.glob("*.safetensors")) or sorted(src.glob("*.bin"))
        self.identity = {"kind": "hf", "model": model_cfg.name_or_path,
                         "weights": sha256_files(weights) if weights else model_cfg.name_or_path,
                         "eos": model_cfg.eos_token, "chat_template": model_cfg.chat_template}
        self.model, self.tok = load_model_and_tokenizer(model_cfg, device=default_device())  # batches follow model.device
        if cfg.adapter:
            from peft import PeftModel

            adapter = Path(cfg.adapter)
            files = sorted(adapter.glob("adapter_model.*"))
            if not files:
                raise MissingFile(f"scorer.adapter={cfg.adapter}: no adapter_model.* in that folder")
            self.identity["adapter"] = sha256_files(files)
            self.model = PeftModel.from_pretrained(self.model, str(adapter)).merge_and_unload()
        self.model.eval()
        self.tok.padding_side = "left"
        self.batch_size = cfg.batch_size
        self.method = cfg.method or "generate"
        if self.method == "generate":
            self._check_answer_fits(cfg.max_new_tokens, (prompt or AuditPromptConfig()).parser, model_cfg.name_or_path)
            self.decoding = {"do_sample": False, "max_new_tokens": cfg.max_new_tokens}
        else:
            parser = (prompt or AuditPromptConfig()).parser
            if parser not in ANSWER_CHOICES:
                raise ConfigError(f"scorer.method=answer_probs needs a prompt.parser with answer choices "
                                 f"({sorted(ANSWER_CHOICES)}), got {parser!r}")
            choices = ANSWER_CHOICES[parser]
            self.prefix_ids = self.tok(choices.prefix, add_special_tokens=False)["input_ids"]
            self.trie = answer_trie(self.tok, choices, model_cfg.name_or_path)
            self.values = torch.tensor(list(choices.values.values()))
            self.decoding = {"method": "answer_probs", "scheme": "constrained_sequence", "prefix": choices.prefix,
                             "suffix": choices.suffix, "choices": choices.values}

    def prompt(self, item: ScoreItem) -> str:
        return self.tok.apply_chat_template(item.messages, tokenize=False, add_generation_prompt=True)

    @torch.no_grad()
    def answer(self, items: list[ScoreItem]) -> list[str] | list[float]:
        out: list = []
        for i in range(0, len(items), self.batch_size):
            chunk = items[i:i + self.batch_size]
            out += self._generate(chunk) if self.method == "generate" else self._answer_probs(chunk)
        return out

    def _generate(self, items: list[ScoreItem]) -> list[str]:
        enc = self.tok([self.prompt(it) for it in items], return_tensors="pt", padding=True,
                       add_special_tokens=False).to(self.model.device)
        gen = self.model.generate(**enc, **self.decoding, pad_token_id=self.tok.pad_token_id)
        return self.tok.batch_decode(gen[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)

    def _check_answer_fits(self, max_new_tokens: int, parser: str, model_name: str) -> None:
        """A greedy answer cut before its closing tag is unparseable: refuse a limit shorter
        than the parser's longest answer ("<answer>10</answer>": 8 SmolLM2 tokens)."""
        choices = ANSWER_CHOICES.get(parser)
        if choices is None:
            return
        longest = max((choices.prefix + t + choices.suffix for t in choices.values),
                      key=lambda a: len(self.tok(a, add_special_tokens=False)["input_ids"]))
        need = len(self.tok(longest, add_special_tokens=False)["input_ids"])
        if max_new_tokens < need:
            raise ConfigError(f"scorer.max_new_tokens={max_new_tokens} cuts the answer {longest!r} "
                             f"({need} tokens for {model_name}); set scorer.max_new_tokens >= {need}")

    def _answer_probs(self, items: list[ScoreItem]) -> list[float]:
        """Prompt and prefix are tokenized apart and joined, exactly as the fine-tune joins
        prompt and answer; left padding with explicit positions. Returns sum_v P(v) * value
        with P(v) the constrained sequence probability (module docstring)."""
        base = [self.tok(self.prompt(it), add_special_tokens=False)["input_ids"] + self.prefix_ids for it in items]
        logp: dict[TokenPath, torch.Tensor] = {}
        for path in self.trie.paths:
            enc = self.tok.pad({"input_ids": [b + list(path) for b in base]}, return_tensors="pt").to(self.model.device)
            mask = enc["attention_mask"]
            logits = self.model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0),
                                logits_to_keep=len(path) + 1, use_cache=False).logits[:, -(len(path) + 1):]
            for j in range(len(path) + 1):
                node = path[:j]
                if node in self.trie.branches and node not in logp:
                    logp[node] = logits[:, j, self.trie.branches[node]].float().log_softmax(-1).cpu()
        seq_lp = torch.zeros(len(items), len(self.trie.sequences))
        for s, seq in enumerate(self.trie.sequences):
            for j in range(len(seq)):
                node = seq[:j]
                if node in self.trie.branches:
                    seq_lp[:, s] += logp[node][:, self.trie.branches[node].index(seq[j])]
        return (seq_lp.exp() * self.values).sum(-1).tolist()
