"""Score with a local Hugging Face causal LM (optionally + a LoRA adapter), greedy decoding."""

from __future__ import annotations

from pathlib import Path

import torch

from toolsense.audit.scorers.base import SCORERS, ScoreItem, ScorerConfig, sha256_files
from toolsense.models import ModelConfig, load_model_and_tokenizer, resolve_model_dir


class HFScorer:
    def __init__(self, cfg: ScorerConfig, model_cfg: ModelConfig):
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
        self.decoding = {"do_sample": False, "max_new_tokens": cfg.max_new_tokens}

    def prompt(self, item: ScoreItem) -> str:
        return self.tok.apply_chat_template(item.messages, tokenize=False, add_generation_prompt=True)

    @torch.no_grad()
    def answer(self, items: list[ScoreItem]) -> list[str]:
        out: list[str] = []
        for i in range(0, len(items), self.batch_size):
            texts = [self.prompt(it) for it in items[i:i + self.batch_size]]
            enc = self.tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.model.device)
            gen = self.model.generate(**enc, **self.decoding, pad_token_id=self.tok.pad_token_id)
            out += self.tok.batch_decode(gen[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        return out


@SCORERS.register("hf")
def _hf(cfg: ScorerConfig, model_cfg: ModelConfig) -> HFScorer:
    return HFScorer(cfg, model_cfg)
