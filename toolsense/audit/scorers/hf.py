"""Score with a local Hugging Face causal LM (optionally + a LoRA adapter).

Two methods (``scorer.method``): ``generate`` decodes greedily and the prompt's parser reads the
text (unparseable answers are counted); ``answer_probs`` opens the assistant turn with the
parser's answer prefix (``<answer>``) and scores the expected value of the answer under the
model's next-token distribution over the allowed digits - one forward pass, and a continuous
score that ranks records even when the greedy answer is the same digit for most of them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch

from toolsense.audit.prompting import ANSWER_CHOICES, AuditPromptConfig
from toolsense.audit.scorers.base import SCORERS, ScoreItem, ScorerConfig, sha256_files
from toolsense.models import ModelConfig, load_model_and_tokenizer, resolve_model_dir


class HFScorer:
    def __init__(self, cfg: ScorerConfig, model_cfg: ModelConfig, prompt: Optional[AuditPromptConfig] = None):
        src = Path(resolve_model_dir(model_cfg))
        weights = sorted(src.glob("*.safetensors")) or sorted(src.glob("*.bin"))
        self.identity = {"kind": "hf", "model": model_cfg.name_or_path,
                         "weights": sha256_files(weights) if weights else model_cfg.name_or_path,
                         "eos": model_cfg.eos_token, "chat_template": model_cfg.chat_template}
        self.model, self.tok = load_model_and_tokenizer(model_cfg)
        if cfg.adapter:
            from peft import PeftModel

            adapter = Path(cfg.adapter)
            files = sorted(adapter.glob("adapter_model.*"))
            if not files:
                raise FileNotFoundError(f"scorer.adapter={cfg.adapter}: no adapter_model.* in that folder")
            self.identity["adapter"] = sha256_files(files)
            self.model = PeftModel.from_pretrained(self.model, str(adapter)).merge_and_unload()
        self.model.eval()
        self.tok.padding_side = "left"
        self.batch_size = cfg.batch_size
        self.method = cfg.method or "generate"
        if self.method == "generate":
            self.decoding = {"do_sample": False, "max_new_tokens": cfg.max_new_tokens}
        else:
            parser = (prompt or AuditPromptConfig()).parser
            if parser not in ANSWER_CHOICES:
                raise ValueError(f"scorer.method=answer_probs needs a prompt.parser with answer choices "
                                 f"({sorted(ANSWER_CHOICES)}), got {parser!r}")
            choices = ANSWER_CHOICES[parser]
            self.prefix_ids = self.tok(choices.prefix, add_special_tokens=False)["input_ids"]
            self.choice_ids, values = [], []
            for text, value in choices.values.items():
                ids = self.tok(choices.prefix + text, add_special_tokens=False)["input_ids"]
                if ids[:len(self.prefix_ids)] != self.prefix_ids or len(ids) != len(self.prefix_ids) + 1:
                    raise ValueError(f"scorer.method=answer_probs: {choices.prefix + text!r} is not the prefix plus "
                                     f"one token for {model_cfg.name_or_path}'s tokenizer")
                self.choice_ids.append(ids[-1])
                values.append(value)
            self.values = torch.tensor(values)
            self.decoding = {"method": "answer_probs", "prefix": choices.prefix, "choices": choices.values}

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

    def _answer_probs(self, items: list[ScoreItem]) -> list[float]:
        """Prompt and prefix are tokenized apart and joined, exactly as the fine-tune joins
        prompt and answer; left padding with explicit positions."""
        ids = [self.tok(self.prompt(it), add_special_tokens=False)["input_ids"] + self.prefix_ids for it in items]
        enc = self.tok.pad({"input_ids": ids}, return_tensors="pt").to(self.model.device)
        mask = enc["attention_mask"]
        logits = self.model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0),
                            logits_to_keep=1, use_cache=False).logits[:, -1]
        probs = logits[:, self.choice_ids].float().softmax(-1).cpu()
        return (probs * self.values).sum(-1).tolist()


@SCORERS.register("hf")
def _hf(cfg: ScorerConfig, model_cfg: ModelConfig, prompt: Optional[AuditPromptConfig] = None) -> HFScorer:
    return HFScorer(cfg, model_cfg, prompt)
