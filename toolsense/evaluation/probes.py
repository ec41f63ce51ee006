"""MCQ and QA probes: does the model know what a tool does from its virtual token alone?

The prompt names the tool only through its token(s) ("Consider this tool: <<...>>"); options
are shuffled per item with a seeded RNG (the permutation is logged) and the answer is the
highest-scoring of the allowed answers (A/B/C/D, or Yes/No) — decoding constrained to them.
The ``control`` mode shows the tool's name instead of its token, separating knowledge of the
tool from knowledge carried by the token. Accuracy comes with a bootstrap interval and the
random baseline (25% / 50%).
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any, Sequence

import torch
from tqdm import tqdm

from toolsense.data.prompts import render_prompt, with_system
from toolsense.evaluation.beam import left_pad, prefill
from toolsense.evaluation.benchmarks import Benchmark, ProbeItem
from toolsense.evaluation.config import ProbeConfig
from toolsense.evaluation.context import EvalModel
from toolsense.evaluation.metrics import accuracy
from toolsense.evaluation.outputs import SampleLog, git_sha, write_json
from toolsense.evaluation.retrieval import encode
from toolsense.utils.warnings import summarise

log = logging.getLogger(__name__)
LETTERS = "ABCDEFGH"


def permutation(item: ProbeItem, kind: str, seed: int) -> list[int]:
    """MCQ options are shuffled with an RNG seeded by (seed, item id); QA keeps Yes, No."""
    perm = list(range(len(item.options)))
    if kind == "mcq":
        random.Random(f"{seed}:{item.item_id}").shuffle(perm)
    return perm


def tool_reference(ev: EvalModel, item: ProbeItem, mode: str) -> str:
    """How the prompt names the tool: its virtual token(s), or (control) its readable name."""
    if mode == "token":
        return "".join(ev.index.paths[item.tool])
    rec = ev.catalog[item.tool] if item.tool in ev.catalog else None
    service = (rec.tool_title or rec.service) if rec else item.tool_record.get("tool_title") or item.tool.split("&&")[0]
    api = (rec.api_title or rec.api) if rec else item.tool_record.get("api_title") or item.tool.split("&&", 1)[-1]
    return f"{service} (API: {api})"


def probe_prompt(ev: EvalModel, item: ProbeItem, kind: str, mode: str, perm: Sequence[int], cfg: ProbeConfig) -> str:
    if kind == "mcq":
        options = "\n".join(f"{LETTERS[j]}. {item.options[p]}" for j, p in enumerate(perm))
        choices = ", ".join(LETTERS[: len(perm) - 1]) + f" or {LETTERS[len(perm) - 1]}"
    else:
        options, choices = "", "Yes or No"
    text = cfg.template.format(tool=tool_reference(ev, item, mode), question=item.question, options=options, choices=choices)
    messages = [{"role": "user", "content": text.replace("\n\n", "\n")}]
    if cfg.use_system_prompt:
        messages = with_system(messages, ev.prompts)
    return render_prompt(ev.tokenizer, messages)


@torch.no_grad()
def score_answers(model, tokenizer, prompts: Sequence[str], answers: Sequence[str]) -> torch.Tensor:
    """``[len(prompts), len(answers)]`` log-probability of each answer string after each prompt:
    one forward when every answer is a single distinct token, else teacher-forced sums."""
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ans_ids = encode(tokenizer, answers)
    p_ids = encode(tokenizer, prompts)
    if all(len(a) == 1 for a in ans_ids) and len({a[0] for a in ans_ids}) == len(ans_ids):
        inp, mask = left_pad(p_ids, pad, device)
        return prefill(model, inp, mask).logp[:, [a[0] for a in ans_ids]].cpu()
    out = torch.empty(len(prompts), len(answers))
    for j, a in enumerate(ans_ids):
        inp, mask = left_pad([p + a for p in p_ids], pad, device)
        logits = model(input_ids=inp, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits
        logp = torch.log_softmax(logits[:, -len(a) - 1 : -1].float(), -1)
        out[:, j] = logp.gather(-1, torch.as_tensor(a, device=device)[None, :, None].expand(len(prompts), -1, 1)).sum((1, 2)).cpu()
    return out


def evaluate_probe(ev: EvalModel, bench: Benchmark, mode: str, cfg: ProbeConfig, out_dir: str | Path,
                   resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Evaluate one probe benchmark in one mode; writes samples.jsonl and results.json."""
    out_dir = Path(out_dir)
    kind = bench.kind
    known = [it for it in bench.items if it.tool in ev.index.paths]
    missing = sorted({it.tool for it in bench.items if it.tool not in ev.index.paths})
    if missing:
        summarise(log, missing, f"probe tools of {bench.name} not in the index (their {len(bench.items) - len(known)} "
                  "items are skipped)", out_dir / "missing_tools.txt")
    n_opt = len(bench.items[0].options)
    answers = list(LETTERS[:n_opt]) if kind == "mcq" else ["Yes", "No"]
    with SampleLog(out_dir / "samples.jsonl") as samples:
        todo = [it for it in known if not samples.done(it.item_id)]
        for start in tqdm(range(0, len(todo), cfg.batch_size), desc=f"{bench.name}/{mode}", unit="batch"):
            chunk = todo[start : start + cfg.batch_size]
            perms = [permutation(it, kind, cfg.seed) for it in chunk]
            prompts = [probe_prompt(ev, it, kind, mode, p, cfg) for it, p in zip(chunk, perms)]
            scores = score_answers(ev.model, ev.tokenizer, prompts, answers)
            for it, perm, prompt, sc in zip(chunk, perms, prompts, scores):
                gold_pos = perm.index(it.answer)
                pred = int(sc.argmax())
                samples.add({
                    "item_id": it.item_id, "tool": it.tool, "mode": mode, "question": it.question, "prompt": prompt,
                    "permutation": perm, "options_shown": [it.options[p] for p in perm],
                    "gold": answers[gold_pos], "pred": answers[pred], "correct": pred == gold_pos,
                    "scores": [round(float(s), 5) for s in sc],
                })
        rows = samples.ordered([it.item_id for it in known])
    chance = 1.0 / len(answers)
    acc = accuracy([r["correct"] for r in rows], resamples, seed) if rows else {"value": None, "lo": None, "hi": None}
    result = {
        "benchmark": bench.name, "system": mode, "kind": kind, "n": len(rows), "chance": chance,
        "metrics": {"accuracy": acc}, "above_chance": bool(rows) and acc["lo"] > chance,
        "missing": {"count": len(missing), "names": missing, "items_skipped": len(bench.items) - len(known)},
        "git_sha": git_sha(), "hashes": {"benchmark_sha256": bench.sha256, "index_sha256": ev.index_sha256},
        "benchmark_path": bench.path, "source": ev.source, "probe": {"seed": cfg.seed, "template": cfg.template},
    }
    write_json(out_dir / "results.json", result)
    return result
