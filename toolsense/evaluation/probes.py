"""MCQ and QA probes: does the model know what a tool does from its virtual token alone?

The prompt names the tool only through its token(s) ("Consider this tool: <<...>>"); options
are shuffled per item with a seeded RNG (the permutation is logged) and the answer is the
highest-scoring of the allowed answers (A/B/C/D, or Yes/No) — decoding constrained to them.
The ``control`` mode shows the tool's name instead of its token, separating knowledge of the
tool from knowledge carried by the token; ``card`` shows its name and descriptions, the
ceiling that tells whether the model can answer the probe at all; ``options`` names no tool
(the template's {tool} line left out), the floor of what the question and options give away. Accuracy comes with a
bootstrap interval, chance, the majority rate, the answer distributions and a flag for a
one-answer probe; ``debias=circular`` adds rotation-averaged (MCQ) and prior-free (QA)
accuracies (probe_stats.py).
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any, Optional, Sequence

import torch
from tqdm import tqdm

from toolsense.data.prompts import LETTERS, options_only, probe_answers, render_prompt, with_system
from toolsense.decoding.beam import left_pad, prefill
from toolsense.decoding.head import fp32_head
from toolsense.decoding.retrieval import encode
from toolsense.evaluation.benchmarks import Benchmark, ProbeItem
from toolsense.evaluation.config import ProbeConfig
from toolsense.evaluation.context import EvalModel
from toolsense.evaluation.coverage import Stage2Tools, coverage_summary, is_covered
from toolsense.evaluation.outputs import SampleLog, publish_result
from toolsense.evaluation.probe_stats import centred_predictions, debiased_correct, distribution, majority_rate, rotation, top_answer
from toolsense.metrics.intervals import accuracy
from toolsense.utils.io import DataError, git_sha
from toolsense.utils.warnings import summarise

log = logging.getLogger(__name__)


def permutation(item: ProbeItem, kind: str, seed: int) -> list[int]:
    """MCQ options are shuffled with an RNG seeded by (seed, item id); QA keeps Yes, No."""
    perm = list(range(len(item.options)))
    if kind == "mcq":
        random.Random(f"{seed}:{item.item_id}").shuffle(perm)
    return perm


def _names(ev: EvalModel, item: ProbeItem) -> tuple[str, str, str, str]:
    """(service title, API title, service description, API description) from the catalog, or
    from the probe file's own tool record when the catalog lacks the tool."""
    rec = ev.catalog[item.tool] if item.tool in ev.catalog else None
    if rec:
        return rec.tool_title or rec.service, rec.api_title or rec.api, rec.tool_description, rec.api_description
    raw = item.tool_record
    return (raw.get("tool_title") or item.tool.split("&&")[0], raw.get("api_title") or item.tool.split("&&", 1)[-1],
            raw.get("tool_description") or "", raw.get("api_description") or "")


def tool_reference(ev: EvalModel, item: ProbeItem, mode: str) -> str:
    """How the prompt names the tool: its virtual token(s); (control) its readable name; (card) its name and descriptions, on one line."""
    if mode == "token":
        return "".join(ev.index.paths[item.tool])
    service, api, service_desc, api_desc = _names(ev, item)
    ref = f"{service} (API: {api})"
    if mode == "card":
        parts = [ref] + [f"{label}: {' '.join(d.split())}" for label, d in
                         (("Service description", service_desc), ("API description", api_desc)) if d.strip()]
        ref = " ".join(p if p[-1] in ".!?" else p + "." for p in parts)
    return ref


def probe_prompt(ev: EvalModel, item: ProbeItem, kind: str, mode: str, perm: Sequence[int], cfg: ProbeConfig,
                 chat: bool = True) -> str | list[dict]:
    """The chat-templated prompt; ``chat=False``: its messages (what lm-eval's --apply_chat_template renders)."""
    if kind == "mcq":
        options = "\n".join(f"{LETTERS[j]}. {item.options[p]}" for j, p in enumerate(perm))
        choices = ", ".join(LETTERS[: len(perm) - 1]) + f" or {LETTERS[len(perm) - 1]}"
    else:
        options, choices = "", "Yes or No"
    template, tool = (options_only(cfg.template), "") if mode == "options" else (cfg.template, tool_reference(ev, item, mode))
    text = template.format(tool=tool, question=item.question, options=options, choices=choices)
    messages = [{"role": "user", "content": text.replace("\n\n", "\n")}]
    messages = with_system(messages, ev.prompts) if cfg.use_system_prompt else messages
    return render_prompt(ev.tokenizer, messages) if chat else messages


def check_probe_lengths(ev: EvalModel, bench: Benchmark, modes: Sequence[str], cfg: ProbeConfig, where: str) -> None:
    """Refuse, before any folder is claimed, probe items whose prompt (in any of ``modes``, the
    seeded option order) and longest answer pass the model's context (``max_position_embeddings``):
    past it an item is scored on positions the model never trained, and a very long one grows
    memory until the OOM killer ends the run without a word (retrieval queries: decoding/length.py).
    The DataError names ``where``, the count, the limit and the longest items, and what to shorten:
    the questions, or (when only ``card`` is too long) the tools' descriptions."""
    context = getattr(ev.model.config, "max_position_embeddings", None)
    known = [it for it in bench.items if it.tool in ev.index.paths]  # the others are skipped, not scored
    if not context or not known:
        return
    answer = max(len(a) for a in encode(ev.tokenizer, probe_answers(bench.kind, len(known[0].options))))
    room = context - answer
    over: dict[str, int] = {}
    in_modes: dict[str, set[str]] = {}
    for mode in modes:
        prompts = [probe_prompt(ev, it, bench.kind, mode, permutation(it, bench.kind, cfg.seed), cfg) for it in known]
        for it, ids in zip(known, encode(ev.tokenizer, prompts)):
            if len(ids) > room:
                over[it.item_id] = max(len(ids), over.get(it.item_id, 0))
                in_modes.setdefault(it.item_id, set()).add(mode)
    if over:
        shown = ", ".join(f"{k!r} ({n} tokens)" for k, n in sorted(over.items(), key=lambda kv: -kv[1])[:5])
        head = (f"{where}: {len(over)} of {len(known)} probe items are longer than the model can read ({room} prompt "
                f"tokens: the model's context of {context} less {answer} of the answer); the longest: {shown}.")
        if all(m == {"card"} for m in in_modes.values()):  # the questions fit; the tool cards do not
            tools = sorted({it.tool for it in known if it.item_id in over})
            raise DataError(f"{head} Only mode card is too long: its prompt holds the tool's descriptions ({len(tools)} tools, "
                            f"e.g. {tools[0]!r}). Shorten those descriptions in the catalog, or leave card out of probe.modes")
        raise DataError(f"{head} Shorten their questions or options, or leave them out of the benchmark")


@torch.no_grad()
def score_answers(model, tokenizer, prompts: Sequence[str], answers: Sequence[str]) -> torch.Tensor:
    """``[len(prompts), len(answers)]`` log-probability of each answer string after each prompt:
    one forward when every answer is a single distinct token, else teacher-forced sums. The logits
    come from the LM head in fp32 (``decoding.head.fp32_head``, over the tokenizer's tokens): a bf16
    model's bf16 logits (8 bits of mantissa) round near-equal options to exact ties."""
    with fp32_head(model, len(tokenizer)):
        return _score_answers(model, tokenizer, prompts, answers)


def _score_answers(model, tokenizer, prompts: Sequence[str], answers: Sequence[str]) -> torch.Tensor:
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
        logits = model(input_ids=inp, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                       logits_to_keep=len(a) + 1).logits  # the answer's positions only, not the prompt's
        logp = torch.log_softmax(logits[:, :-1].float(), -1)
        out[:, j] = logp.gather(-1, torch.as_tensor(a, device=device)[None, :, None].expand(len(prompts), -1, 1)).sum((1, 2)).cpu()
    return out


def tied_answers(scores: torch.Tensor, answers: Sequence[str]) -> list[str]:
    """The answers that share the top score of ``scores`` when more than one does (else []): argmax then
    picks the first of them in the shown order, so such a row is flagged (``tied`` in samples.jsonl,
    ``ties`` in results.json), never counted silently as an answer "A" or "Yes" the model chose."""
    top = scores.max()
    tied = [a for a, x in zip(answers, scores.tolist()) if x == float(top)]
    return tied if len(tied) > 1 else []


def _rotations(kind: str, cfg: ProbeConfig, n_opt: int) -> int:
    """Orders each item is scored in: every cyclic rotation for circular MCQ, else one."""
    return n_opt if kind == "mcq" and cfg.debias == "circular" else 1


def _score_chunk(ev: EvalModel, chunk: Sequence[ProbeItem], kind: str, mode: str, cfg: ProbeConfig,
                 answers: Sequence[str]) -> list[dict]:
    """Sample rows of ``chunk``, every item scored in each of its rotations in one batch; the
    top-level fields are rotation 0 (the paper's single seeded order)."""
    n_rot = _rotations(kind, cfg, len(answers))
    perms = [[rotation(permutation(it, kind, cfg.seed), r) for r in range(n_rot)] for it in chunk]
    prompts = [probe_prompt(ev, it, kind, mode, p, cfg) for it, ps in zip(chunk, perms) for p in ps]
    scores = score_answers(ev.model, ev.tokenizer, prompts, answers).view(len(chunk), n_rot, len(answers))
    rows = []
    for i, it in enumerate(chunk):
        rots = []
        for perm, sc in zip(perms[i], scores[i]):
            gold_pos, pred = perm.index(it.answer), int(sc.argmax())
            tied = tied_answers(sc, answers)
            rots.append({"permutation": perm, "gold": answers[gold_pos], "pred": answers[pred],
                         "correct": pred == gold_pos, "scores": [round(float(x), 5) for x in sc],
                         **({"tied": tied} if tied else {})})
        row = {"item_id": it.item_id, "tool": it.tool, "mode": mode, "question": it.question,
               "prompt": prompts[i * n_rot], "options_shown": [it.options[p] for p in perms[i][0]], **rots[0]}
        if n_rot > 1:
            row["rotations"] = rots
        rows.append(row)
    return rows


def summarize_probe(rows: Sequence[dict], kind: str, answers: Sequence[str], cfg: ProbeConfig,
                    resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Accuracy and what to compare it with (probe_stats.py), from the sample rows alone:
    distributions of predicted and gold answers, majority rate, chance, the top answer and its
    flag, and under ``debias=circular`` the circular (MCQ) or calibrated (QA) accuracies."""
    answers = list(answers)
    none = {"value": None, "lo": None, "hi": None}
    pred_dist = distribution([r["pred"] for r in rows], answers)
    gold_dist = distribution([r["gold"] for r in rows], answers)
    out: dict[str, Any] = {
        "chance": 1.0 / len(answers), "majority_rate": majority_rate(gold_dist),
        "answer_distribution": pred_dist, "gold_distribution": gold_dist,
        "top_answer": top_answer(pred_dist, cfg.flag_share),
        "ties": sum("tied" in r for r in rows),
        "metrics": {"accuracy": accuracy([r["correct"] for r in rows], resamples, seed) if rows else none},
        "debias": {"method": "none"},
    }
    credits = debiased_correct(rows, kind, answers) if cfg.debias == "circular" else {}
    if not credits:
        return out
    for key, credit in credits.items():
        out["metrics"][key] = accuracy(credit, resamples, seed)
    if kind == "mcq":
        rots = [r["rotations"] for r in rows]
        out["debias"] = {"method": "circular", "rotations": len(rots[0]),
                         "answer_distribution": distribution([x["pred"] for rot in rots for x in rot], answers)}
    else:
        preds, offset = centred_predictions([r["scores"] for r in rows])
        calibrated = distribution([answers[p] for p in preds], answers)
        out["debias"] = {"method": "mean-centred log-odds", "offset_log_odds_yes": offset,
                         "answer_distribution": calibrated, "top_answer": top_answer(calibrated, cfg.flag_share)}
    return out


def evaluate_probe(ev: EvalModel, bench: Benchmark, mode: str, cfg: ProbeConfig, out_dir: str | Path,
                   resamples: int = 1000, seed: int = 0, trained: Optional[Stage2Tools] = None) -> dict[str, Any]:
    """Evaluate one probe benchmark in one mode; writes samples.jsonl (resumable; rows from a
    run without the rotations circular MCQ needs are scored again) and results.json. With
    ``trained`` (coverage.py) each row records ``covered`` (Stage 2 trained on its tool) and
    results.json ``coverage``; None = not applicable (an untrained model)."""
    out_dir = Path(out_dir)
    kind = bench.kind
    known = [it for it in bench.items if it.tool in ev.index.paths]
    missing = sorted({it.tool for it in bench.items if it.tool not in ev.index.paths})
    if missing:
        summarise(log, missing, f"probe tools of {bench.name} not in the index (their {len(bench.items) - len(known)} "
                  "items are skipped)", out_dir / "missing_tools.txt")
    answers = probe_answers(kind, len(bench.items[0].options))
    n_rot = _rotations(kind, cfg, len(answers))
    per_batch = max(1, cfg.batch_size // n_rot)
    with SampleLog(out_dir / "samples.jsonl") as samples:
        todo = [it for it in known if not samples.done(it.item_id) or (n_rot > 1 and "rotations" not in samples.rows[it.item_id])]
        for start in tqdm(range(0, len(todo), per_batch), desc=f"{bench.name}/{mode}", unit="batch"):
            for row in _score_chunk(ev, todo[start : start + per_batch], kind, mode, cfg, answers):
                row["covered"] = row["covered_any"] = is_covered([row["tool"]], trained)
                samples.add(row, replace=samples.done(row["item_id"]))  # a row without rotations, rescored
        rows = samples.ordered([it.item_id for it in known])
    stats = summarize_probe(rows, kind, answers, cfg, resamples, seed)
    if stats["ties"]:
        log.warning("%s/%s: %d of %d items tie between answers at the top score; each is counted as the first tied "
                    "answer shown (rows flagged 'tied' in %s)", bench.name, mode, stats["ties"], len(rows), out_dir / "samples.jsonl")
    acc = stats["metrics"]["accuracy"]
    result = {
        "benchmark": bench.name, "system": mode, "mode": mode, "kind": kind, "n": len(rows), **stats,
        "coverage": coverage_summary([[r["tool"]] for r in rows], trained),
        "above_chance": bool(rows) and acc["lo"] > stats["chance"],
        "missing": {"count": len(missing), "names": missing, "items_skipped": len(bench.items) - len(known)},
        "git_sha": git_sha(), "hashes": {"benchmark_sha256": bench.sha256, "index_sha256": ev.index_sha256},
        "benchmark_path": bench.path, "source": ev.source, "index_sharing": ev.index.sharing(),
        "probe": {"seed": cfg.seed, "template": cfg.template, "debias": cfg.debias, "flag_share": cfg.flag_share},
    }
    publish_result(out_dir, result)
    return result
