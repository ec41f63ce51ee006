"""Queries longer than the model can read, found before any search starts.

A prompt past the model's context is scored silently on positions it never trained (Qwen's 2,048
tokens: queries of 2.6k-8k tokens were), and one of 60,000 tokens grew the process to 20 GB
until the OOM killer ended it without a word. Every query's prompt (the query in the retrieval
template, as the search renders it) is therefore measured first against the prompt budget: the
model's context (``max_position_embeddings``) less the tokens the search generates, or
``query_length.max_tokens`` when smaller. ``policy=refuse`` (the default) stops naming the
benchmark, the count and the longest items; ``truncate`` cuts each over-long query's text to fit
(its last tokens go), logs how many and counts them in results.json.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Optional, Sequence

from toolsense.catalog import Query
from toolsense.decoding.config import QueryLengthConfig
from toolsense.decoding.retrieval import Retriever, encode
from toolsense.utils.errors import UserError

log = logging.getLogger(__name__)


def prompt_budget(retriever: Retriever, max_tokens: Optional[int]) -> tuple[int, str]:
    """The longest prompt the search may be given, and why (for messages)."""
    steps = retriever.depth + 1
    if retriever.dec.free_form:
        steps = max(steps, retriever.dec.max_new_tokens or steps)
    context = getattr(retriever.model.config, "max_position_embeddings", None)
    budget, why = (context - steps, f"the model's context of {context} less {steps} generated") if context else (None, "")
    if max_tokens is not None and (budget is None or max_tokens < budget):
        budget, why = max_tokens, f"query_length.max_tokens={max_tokens}"
    return (budget, why) if budget is not None else (10**9, "no limit known")


def fit_queries(retriever: Retriever, queries: Sequence[Query], cfg: QueryLengthConfig,
                where: str) -> tuple[list[Query], dict[str, Any]]:
    """The queries to search (over-long ones cut under ``truncate``) and the report
    ``{policy, limit_tokens, limit, queries, over, truncated, longest, items}``; under ``refuse`` an
    over-long query raises ValueError naming ``where``, the count, the limit and the longest items."""
    budget, why = prompt_budget(retriever, cfg.max_tokens)
    lengths = [len(ids) for ids in encode(retriever.tok, [retriever.prompt(q) for q in queries])]
    over = sorted((i for i, n in enumerate(lengths) if n > budget), key=lambda i: -lengths[i])
    report = {"policy": cfg.policy, "limit_tokens": budget, "limit": why, "queries": len(queries), "over": len(over),
              "truncated": 0, "longest": max(lengths, default=0), "items": [queries[i].query_id for i in over[:10]]}
    if over and cfg.policy == "refuse":
        shown = ", ".join(f"{queries[i].query_id!r} ({lengths[i]} tokens)" for i in over[:5])
        raise UserError(f"{where}: {len(over)} of {len(queries)} queries are longer than the model can read "
                        f"({budget} prompt tokens: {why}); the longest: {shown}. Set query_length.policy=truncate to cut "
                        "them to fit (counted in results.json), or leave them out of the benchmark")
    out = list(queries)
    for i in over:
        out[i] = _truncated(retriever, queries[i], lengths[i] - budget, budget, where)
    report["truncated"] = len(over)
    if over:  # the cut changes what is scored: said where the run is watched, not only in results.json
        log.warning("%s: %d of %d queries cut to fit %d prompt tokens (%s; query_length.policy=truncate); the longest "
                    "was %d tokens", where, len(over), len(queries), budget, why, lengths[over[0]])
    return out, report


def _truncated(retriever: Retriever, q: Query, excess: int, budget: int, where: str) -> Query:
    """``q`` with the last tokens of its text cut until its prompt fits ``budget`` (a re-encoded
    cut may merge tokens differently, so it is measured again)."""
    ids = retriever.tok(q.text, add_special_tokens=False)["input_ids"]
    keep = len(ids) - excess
    while keep > 0:
        cut = dataclasses.replace(q, text=retriever.tok.decode(ids[:keep]))
        if len(encode(retriever.tok, [retriever.prompt(cut)])[0]) <= budget:
            return cut
        keep -= 1
    raise UserError(f"{where}: query {q.query_id!r}: the prompt template alone is longer than {budget} tokens; "
                    "raise query_length.max_tokens or shorten the retrieval template")
