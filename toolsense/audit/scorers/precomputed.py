"""Scores read from a file: rows keyed by (id, variant) or by the prompt's sha256.

Each row has ``score`` (a number in [0, 1], or null for an unparseable answer) or ``text`` (a
raw answer for the parser). A prompt with no row is an error naming the file and the key."""

from __future__ import annotations

import math

from toolsense.audit.scorers.base import SCORERS, ScoreItem, ScorerConfig, messages_sha256
from toolsense.utils.io import DataError, iter_jsonl, sha256_file


class PrecomputedScorer:
    def __init__(self, cfg: ScorerConfig):
        self.path = cfg.path
        self.by_prompt: dict[str, object] = {}
        self.by_id: dict[tuple[str, str], object] = {}
        for lineno, row in iter_jsonl(cfg.path):
            where = f"{cfg.path}:{lineno}"
            if "score" in row:
                val = row["score"]
                if val is not None and (not isinstance(val, (int, float)) or isinstance(val, bool)
                                        or math.isnan(val) or not 0.0 <= val <= 1.0):
                    raise DataError(f"{where}: field 'score' must be a number in [0, 1] or null, got {val!r}")
                val = None if val is None else float(val)
            elif isinstance(row.get("text"), str):
                val = row["text"]
            else:
                raise DataError(f"{where}: needs field 'score' (number or null) or 'text' (string)")
            if isinstance(row.get("prompt_sha256"), str):
                self.by_prompt[row["prompt_sha256"]] = val
            elif "id" in row and isinstance(row.get("variant"), str):
                self.by_id[(str(row["id"]), row["variant"])] = val
            else:
                raise DataError(f"{where}: needs 'prompt_sha256' or both 'id' and 'variant'")
        self.identity = {"kind": "precomputed", "file": sha256_file(cfg.path)}
        self.decoding: dict = {}

    def answer(self, items: list[ScoreItem]) -> list[str | float | None]:
        out = []
        for it in items:
            h = messages_sha256(it.messages)
            if h in self.by_prompt:
                out.append(self.by_prompt[h])
            elif (it.id, it.variant) in self.by_id:
                out.append(self.by_id[(it.id, it.variant)])
            else:
                raise DataError(f"{self.path}: no score for record {it.id!r} variant {it.variant!r} (prompt_sha256 {h})")
        return out


@SCORERS.register("precomputed")
def _precomputed(cfg: ScorerConfig, model_cfg=None, prompt=None) -> PrecomputedScorer:
    return PrecomputedScorer(cfg)
