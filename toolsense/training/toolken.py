"""Training a toolken head (``head.kind=toolken``; ``models/toolken.py``) on the Stage-2 data.

The base LM is frozen and in eval mode, so each training prompt's answer state is a constant:
the runner reads them once (one forward per prompt), then fits the toolken rows with AdamW on the
joint softmax over vocabulary ∪ toolkens. The run directory is a token run's, with ``toolken/``
in place of ``stage1/`` / ``stage2/``::

    config.yaml, index.json (flat: the tools, in order), metrics.jsonl
    toolken/head.pt        {"tools": [...], "rows": [n_tools, hidden]}; only these were trained
    toolken/head.json      base model, steps, losses (its presence marks the stage done)
    checkpoints/toolken/checkpoint-N/state.pt   rows, optimiser, scheduler, summed loss

A rerun of the same command skips a finished head and resumes an interrupted one from its
newest complete checkpoint; each step's batch is a function of (seed, epoch, step), so a resumed
run ends with the rows an uninterrupted one ends with.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import torch

from toolsense.catalog import Query
from toolsense.data.prompts import render_prompt, retrieval_messages
from toolsense.index import ToolIndex
from toolsense.models import load_model_and_tokenizer
from toolsense.models.toolken import ToolkenHead, answer_states, name_mean_rows, vocab_rows
from toolsense.tracking import forget_rows
from toolsense.training.config import TrainConfig
from toolsense.training.stage import run_recipe
from toolsense.utils.errors import UserError

log = logging.getLogger(__name__)

STAGE = "toolken"
STATE_FILE = "state.pt"


def toolken_done(run_dir: Path) -> bool:
    return (run_dir / STAGE / "head.json").exists()


def toolken_pairs(queries: list[Query], index: ToolIndex, on_unknown: str) -> tuple[list[Query], list[int], list[tuple[str, str]]]:
    """One (query, tool row) pair per gold tool in the index (``multi_tool=split``); unknown tools
    are skipped and listed as ``(query_id, tool)`` (``on_unknown_tool=error`` was checked earlier)."""
    row = {t: i for i, t in enumerate(index.paths)}
    qs, ids, skipped = [], [], []
    for q in queries:
        for t in q.tools:
            if t in row:
                qs.append(q)
                ids.append(row[t])
            else:
                skipped.append((q.query_id, t))
    if not qs:
        raise UserError("head.kind=toolken: no Stage-2 query names a tool of the index")
    return qs, ids, skipped


def newest_checkpoint(folder: Path) -> Optional[Path]:
    """The newest ``checkpoint-N`` holding a complete ``state.pt`` (written to a temporary name, then renamed)."""
    done = [p for p in folder.glob("checkpoint-*") if (p / STATE_FILE).exists()] if folder.is_dir() else []
    return max(done, key=lambda p: int(p.name.rsplit("-", 1)[1]), default=None)


@dataclass
class ToolkenRunner:
    """``setup / train / save / cleanup`` of the toolken head (see the module docstring)."""

    cfg: TrainConfig
    index: ToolIndex
    queries: list[Query]
    run_dir: Path
    tracker: Any = None
    catalog: Any = None
    """The catalog (needed by ``head.formats``: desc2tok reads each tool's text)."""
    head: Optional[ToolkenHead] = field(default=None, init=False)
    states: Optional[torch.Tensor] = field(default=None, init=False)
    targets: Optional[torch.Tensor] = field(default=None, init=False)
    result: dict = field(default_factory=dict, init=False)

    @property
    def ckpt_dir(self) -> Path:
        return self.run_dir / "checkpoints" / STAGE

    def setup(self) -> None:
        torch.manual_seed(self.cfg.trainer.seed)
        model, tok = load_model_and_tokenizer(self.cfg.model, device="cuda" if torch.cuda.is_available() else None)
        model.eval().requires_grad_(False)
        qs, ids, skipped = toolken_pairs(self.queries, self.index, str(self.cfg.stage2.on_unknown_tool))
        self.result["skipped_unknown_tools"] = {"tools": len(skipped), "sample": [f"{a}: {b}" for a, b in skipped[:5]]}
        prompts = [render_prompt(tok, retrieval_messages(q.text, self.cfg.prompts)) for q in qs]
        extra = self.format_pairs(tok)
        prompts, ids = prompts + [p for p, _ in extra], ids + [i for _, i in extra]
        self.result["format_examples"] = len(extra)
        log.info("toolken: reading the answer states of %d Stage-2 prompts with the frozen %s", len(prompts), self.cfg.model.name_or_path)
        dev = next(model.parameters()).device  # the rows train where the LM ran (a GPU at 8B: a 128k-row softmax)
        self.states = answer_states(model, tok, prompts, self.cfg.head.batch_size).to(dev)
        self.targets = torch.tensor(ids, device=dev)
        tools = list(self.index.paths)
        vocab, bias = vocab_rows(model, tok)
        start = name_mean_rows(model, tok, [self.index.init_text[self.index.paths[t][0]] for t in tools])
        self.head = ToolkenHead(tools, start, vocab, bias).to(dev)
        self.result["base_model"] = self.cfg.model.name_or_path
        del model

    def format_pairs(self, tok) -> list[tuple[str, int]]:
        """``(prompt, tool row)`` of the Stage-1 formats of ``head.formats`` (desc2tok: the tool's
        text posed with the memorization prompt, its toolken as the answer)."""
        if not self.cfg.head.formats:
            return []
        from toolsense.data.memorization import MEMORIZATION_FORMATS

        if self.catalog is None:
            raise ValueError("head.formats needs the catalog: ToolkenRunner(catalog=...)")
        row = {t: i for i, t in enumerate(self.index.paths)}
        out = []
        for name in self.cfg.head.formats:
            for ex in MEMORIZATION_FORMATS.get(name).build(self.catalog, self.index, self.cfg.memorization):
                out.append((render_prompt(tok, list(ex.messages)), row[ex.tool]))
        return out

    def steps(self) -> int:
        n, batch = len(self.targets), self.cfg.trainer.effective_batch
        s = self.cfg.stage2
        return s.max_steps if s.max_steps > 0 else max(1, math.ceil(s.epochs * n / batch))

    def batch(self, step: int) -> torch.Tensor:
        """The example ids of optimiser step ``step`` (from 0): epoch ``e``'s order is a permutation
        drawn from ``seed + e`` alone, so a resumed run sees the batches an uninterrupted one does."""
        n, b = len(self.targets), min(self.cfg.trainer.effective_batch, len(self.targets))
        per_epoch = max(1, n // b)
        epoch, k = divmod(step, per_epoch)
        g = torch.Generator().manual_seed(self.cfg.trainer.seed + epoch)
        return torch.randperm(n, generator=g)[k * b:(k + 1) * b].to(self.targets.device)

    def _optimiser(self, total: int):
        from transformers import get_scheduler

        s = self.cfg.stage2
        opt = torch.optim.AdamW([self.head.rows], lr=s.learning_rate, weight_decay=self.cfg.trainer.weight_decay)
        sched = get_scheduler(s.lr_scheduler, opt, num_warmup_steps=int(s.warmup_ratio * total), num_training_steps=total)
        return opt, sched

    def train(self) -> dict:
        total = self.steps()
        opt, sched = self._optimiser(total)
        start, loss_sum, ckpt = 0, 0.0, newest_checkpoint(self.ckpt_dir)
        if ckpt is not None:
            state = torch.load(ckpt / STATE_FILE, map_location=self.head.rows.device)
            with torch.no_grad():
                self.head.rows.copy_(state["rows"])
            opt.load_state_dict(state["optimizer"])
            sched.load_state_dict(state["scheduler"])
            start, loss_sum = state["step"], state["loss_sum"]
            log.info("toolken: resuming from %s (step %d of %d)", ckpt, start, total)
        forget_rows(self.run_dir / "metrics.jsonl", lambda r: r.get("stage") == STAGE and int(r.get("step", 0)) > start)
        first = last = None
        for step in range(start, total):
            idx = self.batch(step)
            loss = self.head.loss(self.states[idx], self.targets[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_([self.head.rows], self.cfg.trainer.max_grad_norm)
            opt.step()
            sched.step()
            value = float(loss.detach())
            loss_sum += value
            first = value if first is None else first
            last = value
            done = step + 1
            if self.tracker is not None and (done % self.cfg.trainer.logging_steps == 0 or step == start or done == total):
                self.tracker.log({f"train/{STAGE}/loss": value, f"train/{STAGE}/learning_rate": sched.get_last_lr()[0]}, done)
            if done % self.cfg.trainer.save_steps == 0 and done < total:
                self._checkpoint(done, opt, sched, loss_sum)
        self.result.update(train_loss=loss_sum / max(total, 1), global_step=total, resumed_from=str(ckpt) if ckpt else None,
                           first_loss=first, last_loss=last, examples=len(self.targets), tools=len(self.head.tools))
        return self.result

    def _checkpoint(self, step: int, opt, sched, loss_sum: float) -> None:
        folder = self.ckpt_dir / f"checkpoint-{step}"
        folder.mkdir(parents=True, exist_ok=True)
        state = {"rows": self.head.rows.detach().clone(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                 "step": step, "loss_sum": loss_sum}
        torch.save(state, folder / (STATE_FILE + ".tmp"))
        (folder / (STATE_FILE + ".tmp")).replace(folder / STATE_FILE)
        saved = sorted(self.ckpt_dir.glob("checkpoint-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
        for old in saved[: -self.cfg.trainer.save_total_limit]:  # keep the newest save_total_limit
            shutil.rmtree(old, ignore_errors=True)

    def save(self) -> Path:
        out, tmp = self.run_dir / STAGE, self.run_dir / (STAGE + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        torch.save(self.head.state(), tmp / "head.pt")
        meta = {"base_model": self.cfg.model.name_or_path, "n_tools": len(self.head.tools), "hidden": int(self.head.rows.shape[1]),
                "n_vocab": self.head.n_vocab, **{k: v for k, v in self.result.items() if k != "base_model"}}
        (tmp / "head.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        tmp.rename(out)
        return out

    def cleanup(self) -> None:
        self.states = self.targets = None

    def run(self) -> dict:
        return run_recipe(self)
