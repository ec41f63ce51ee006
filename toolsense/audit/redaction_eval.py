"""The audit's redaction step (the paper's audit "stage 2", unrelated to training's Stage 2):
score the original and every redacted variant with one frozen scorer (same checkpoint, prompts,
decoding), cache every answer, and compare AUROCs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from toolsense.audit.prompting import PARSERS, AuditPromptConfig, build_messages
from toolsense.audit.redaction import RedactionConfig, compile_class, count_rendered, redact, redact_messages
from toolsense.audit.scorers import ScoreCache, ScoreItem, cache_key
from toolsense.audit.stats import auroc_by_partition, paired_delta_ci
from toolsense.audit.traces import TraceRecord, TraceSet
from toolsense.utils.io import write_jsonl
from toolsense.utils.secrets import Scrubber

Rendered = dict[str, tuple[re.Pattern, str]]
"""Per rendered-scope variant: the class pattern and placeholder applied to its messages."""


def redaction_variants(
    traces: TraceSet, cfg: RedactionConfig, prompt: AuditPromptConfig
) -> tuple[dict[str, TraceSet], dict[str, dict], Rendered]:
    """``{"original": traces, <class>: redacted traces}``, the replacement counts per class, and
    the rendered-scope classes (their traces are the original; the redaction hits the messages)."""
    out, counts, rendered = {"original": traces}, {}, {}
    for cls in cfg.classes:
        if cls.scope == "fields":
            out[cls.name], counts[cls.name] = redact(traces, cls)
        else:
            pattern = compile_class(cls, traces)
            out[cls.name], rendered[cls.name] = traces, (pattern, cls.replacement)
            counts[cls.name] = count_rendered(traces, pattern, lambda rec: build_messages(rec, prompt))
    return out, counts, rendered


def variant_messages(variant: str, rec: TraceRecord, prompt: AuditPromptConfig, rendered: Rendered) -> list[dict]:
    """The messages the scorer sees for ``rec`` under ``variant``."""
    msgs = build_messages(rec, prompt)
    if variant in rendered:
        msgs = redact_messages(msgs, *rendered[variant])[0]
    return msgs


def score_variants(scorer, cache: ScoreCache, sets: dict[str, TraceSet], idx: Sequence[int], prompt: AuditPromptConfig,
                   unparseable_score: float, samples_path: Path, batch: int = 16,
                   rendered: Rendered | None = None, scrub: Scrubber | None = None) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Scores of records ``idx`` under every variant, and the unparseable answers per variant.

    Answers come from the cache when present; new ones are cached batch by batch, so an
    interrupted run resumes there. ``samples.jsonl`` (one row per record and variant: prompt,
    raw answer, parsed score) is rewritten from the answers at the end. An endpoint may echo the
    key it was sent: every answer is scrubbed (``scrub``; default: every secret-looking environment
    variable and key-shaped text, utils/secrets.py) before it is cached, when it is read from a cache
    written before, and every samples row before it is written."""
    parse = PARSERS.get(prompt.parser)
    scrub = scrub or Scrubber.from_env()
    items = [(v, i, ScoreItem(ts.records[i].id, v, variant_messages(v, ts.records[i], prompt, rendered or {})))
             for v, ts in sets.items() for i in idx]
    answers: dict[tuple[str, int], object] = {}
    for v, i, it in items:
        key = cache_key(scorer, it.messages)
        if key in cache:
            answers[(v, i)] = scrub(cache.get(key))
    todo = [(v, i, it) for v, i, it in items if (v, i) not in answers]
    with tqdm(total=len(todo), desc="scoring", leave=False) as bar:
        for b in range(0, len(todo), batch):
            chunk = todo[b:b + batch]
            for (v, i, it), ans in zip(chunk, map(scrub, scorer.answer([it for _, _, it in chunk]))):
                cache.put(cache_key(scorer, it.messages), ans)
                answers[(v, i)] = ans
            bar.update(len(chunk))
    scores = {v: np.full(len(idx), np.nan) for v in sets}
    unparseable = {v: 0 for v in sets}
    pos = {i: n for n, i in enumerate(idx)}
    samples = []
    for v, i, it in items:
        ans = answers[(v, i)]
        score = parse(ans) if isinstance(ans, str) else ans
        parsed = score is not None
        unparseable[v] += int(not parsed)
        scores[v][pos[i]] = score if parsed else unparseable_score
        rec = sets[v].records[i]
        samples.append(scrub({"id": it.id, "variant": v, "partition": rec.partition, "label": rec.label,
                        "prompt": it.messages[-1]["content"], "answer": ans, "parsed": parsed,
                        "score": float(scores[v][pos[i]])}))
    write_jsonl(samples_path, samples)
    return scores, unparseable


def auroc_deltas(traces: TraceSet, idx: Sequence[int], scores: dict[str, np.ndarray], counts: dict[str, dict],
            unparseable: dict[str, int], cfg: RedactionConfig, stats) -> dict:
    """AUROC per variant (overall and per partition, with CIs) and the paper's paired
    ``delta_A = A_original - A_redacted`` (positive: the scorer depends on the class)."""
    y = traces.labels[list(idx)]
    parts = traces.partitions[list(idx)]
    base = scores["original"]
    out = {}
    control = {c.name: c.control for c in cfg.classes}
    scope = {c.name: c.scope for c in cfg.classes}
    for v, s in scores.items():
        by_part = auroc_by_partition(y, s, parts, stats.n_boot, stats.level, stats.seed)
        row = {"auroc": {k: a.as_dict() for k, a in by_part.items()}, "unparseable": int(unparseable.get(v, 0)),
               "control": control.get(v, False)}
        if v != "original":
            row["scope"] = scope[v]
            row["delta_A"] = paired_delta_ci(y, s, base, stats.n_boot, stats.level, stats.seed).as_dict()
            row["delta_A_by_partition"] = {
                str(p): paired_delta_ci(y[parts == p], s[parts == p], base[parts == p], stats.n_boot, stats.level, stats.seed).as_dict()
                for p in sorted(set(parts.tolist()), key=str)}
            row["replacements"] = {k: c for k, c in counts[v].items() if k != "per_record"}
            row["replacements"]["scored_records_touched"] = int(sum(counts[v]["per_record"][i] > 0 for i in idx))
        out[v] = row
    return out
