"""Systems: anything that ranks tools for a query, as a registered plug-in (``SYSTEMS``).

The parametric model (``decoding/retrieval.py: Retriever``) and the baselines (``baselines.py``)
rank tools; the systems here combine them, and any new design is one more decorated builder:

- ``restricted`` (hybrid a): a first-stage baseline (``system.candidates``: BM25 or dense) picks
  the top ``system.n_candidates`` tools, then the parametric model's *constrained* beam search
  runs on a trie of those tools only (one trie per query, built with ``Trie.build`` from the
  index's token ids), so the model re-ranks the candidates and can return nothing else.
- ``rrf`` (hybrid b): reciprocal-rank fusion of the model's constrained ranking with the
  baseline's, ``score(t) = sum over rankings of 1 / (rrf_k + rank)`` (rank from 1; Cormack et
  al. 2009, k = 60), each ranking cut at ``system.fuse_depth`` (default the beam width).

- ``toolken``: a ToolkenGPT-style head (frozen LM + one output row per tool) from its own run
  (``system.run``; evaluation/toolken.py), constrained and free-form, no parametric model needed.

A builder takes ``(ev, catalog, cfg, dec)`` and returns an object whose ``run(queries)`` yields
one :class:`Retrieved` per query (any order): the contract ``tasks.evaluate_ranking`` scores.
A ranker may also say ``known_tools`` (its index), ``source`` (the run that answers) and
``provenance`` (extra results.json keys); the runner otherwise takes the parametric model's.
Both hybrids rank with the constrained search only (``free`` is None): Rf / IS stay the
parametric model's own measures, reported on its ``model`` row; the kinds in :data:`FREE_FORM`
are scored free-form too. How to add one: docs/guides/systems.md.

A system's config section (``system.*``, :class:`SystemConfig`) sits here beside the registry it
names. The searches the rankers run (decoding, the index's token ids, the baselines) are imported
inside the builders and rankers, so ``evaluation/config.py`` reads this module without loading torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Protocol, Sequence

from toolsense.baselines.config import BaselineConfig
from toolsense.catalog import Catalog, Query
from toolsense.decoding.config import DecodingConfig
from toolsense.utils.errors import ConfigError
from toolsense.utils.registry import Registry

if TYPE_CHECKING:
    from toolsense.decoding.retrieval import Retrieved
    from toolsense.evaluation.context import EvalModel


class SystemRanker(Protocol):
    """What the evaluation needs of a system: one :class:`Retrieved` per query."""

    def run(self, queries: Sequence[Query]) -> Iterator[Retrieved]: ...


SYSTEMS: Registry[Callable[["EvalModel", Catalog, SystemConfig, DecodingConfig], SystemRanker]] = Registry("system")


@dataclass
class SystemConfig:
    """A system beside the parametric model and the baselines (``SYSTEMS`` in systems.py;
    ``conf/system/*.yaml``); docs/guides/systems.md says how to add one."""

    kind: str = "restricted"
    """``restricted``: the model's constrained search over the ``candidates`` baseline's top
    ``n_candidates`` tools; ``rrf``: reciprocal-rank fusion of the model's ranking with it;
    ``toolken``: a ToolkenGPT-style head trained into ``run`` (constrained and free-form)."""
    label: Optional[str] = None
    """Row name in tables and folder name; default the kind."""
    candidates: BaselineConfig = field(default_factory=BaselineConfig)
    """The non-parametric ranker the system combines with the model (a baseline section)."""
    n_candidates: int = 20
    """restricted: first-stage tools the model may choose from (its ranking holds at most these)."""
    rrf_k: float = 60.0
    """rrf: the constant k of 1 / (k + rank) (60, Cormack et al. 2009)."""
    fuse_depth: Optional[int] = None
    """rrf: how deep each ranking enters the fusion; None = decoding.beam_width."""
    run: Optional[str] = None
    """toolken: the run trained with ``train.py experiment=toolken`` (its ``toolken/head.pt`` and
    frozen base model rank the tools; no parametric model is needed)."""

    def __post_init__(self) -> None:
        self.kind = SYSTEMS.check(self.kind, "system.kind")
        if isinstance(self.candidates, dict):
            self.candidates = BaselineConfig(**self.candidates)
        if self.n_candidates < 1:
            raise ValueError(f"system.n_candidates must be >= 1, got {self.n_candidates}")
        if not (math.isfinite(self.rrf_k) and self.rrf_k >= 0):
            raise ValueError(f"system.rrf_k must be a finite number >= 0, got {self.rrf_k}")
        if self.fuse_depth is not None and self.fuse_depth < 1:
            raise ValueError(f"system.fuse_depth must be >= 1 or null, got {self.fuse_depth}")
        if self.kind == "toolken" and not self.run:
            raise ValueError("system.run must name a run trained with train.py experiment=toolken "
                             "(system.kind=toolken)")

    def identity(self) -> dict:
        """What the system's rankings depend on besides the model and decoding (its fingerprint)."""
        out: dict = {"kind": self.kind, "candidates": self.candidates.identity()}
        out.update({"n_candidates": self.n_candidates} if self.kind == "restricted" else
                   {"rrf_k": self.rrf_k, "fuse_depth": self.fuse_depth} if self.kind == "rrf" else {})
        if self.kind == "toolken":  # ranks alone: no candidates; its run is the fingerprint's model
            out.pop("candidates")
        return out


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str | None]], k: float = 60.0) -> list[tuple[str, float]]:
    """``[(tool, fused score)]`` best first. A tool's score sums ``1 / (k + rank)`` over the
    rankings that hold it (rank = its first position, from 1; ``None`` outputs hold their slot
    and score nothing; a repeat adds nothing). Ties go to the better best rank, then the name, so
    fusing a ranking of distinct tools with itself (any number of times) returns it unchanged."""
    if k < 0:
        raise ValueError(f"reciprocal rank fusion needs k >= 0, got {k}")
    score: dict[str, float] = defaultdict(float)
    best: dict[str, int] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for i, tool in enumerate(ranking):
            if tool is None or tool in seen:
                continue
            seen.add(tool)
            score[tool] += 1.0 / (k + i + 1)
            best[tool] = min(best.get(tool, i), i)
    return sorted(score.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def _constrained_only(dec: DecodingConfig) -> DecodingConfig:
    return dataclasses.replace(dec, free_form=False)


class RestrictedRanker:
    """Hybrid (a): the model's constrained search over a per-query trie of the first stage's
    top ``n`` tools. Tools of the candidates that the index lacks are skipped (they have no
    token ids); a query left with no candidate gets an empty ranking (every metric 0)."""

    def __init__(self, ev: "EvalModel", first: SystemRanker, n: int, dec: DecodingConfig):
        from toolsense.index.vocabulary import tool_token_ids

        self.ev, self.first, self.n, self.dec = ev, first, n, _constrained_only(dec)
        self.ids = tool_token_ids(ev.index, ev.tokenizer)
        self.depth = ev.index.depth()

    def candidates(self, rec: Retrieved) -> list[str]:
        return [x["tool"] for x in rec.constrained[: self.n] if x["tool"] in self.ids]

    def run(self, queries: Sequence[Query]) -> Iterator[Retrieved]:
        from toolsense.decoding.retrieval import Retrieved, Retriever
        from toolsense.index.trie import Trie

        for rec in self.first.run(queries):
            cands = self.candidates(rec)
            if not cands:
                yield Retrieved(rec.query, "", [], None)
                continue
            trie = Trie.build({t: self.ids[t] for t in cands}, self.ev.tokenizer.eos_token_id)
            retriever = Retriever(self.ev.model, self.ev.tokenizer, trie, self.depth, self.ev.prompts, self.dec)
            out = next(retriever.run([rec.query]))
            rank = {t: i + 1 for i, t in enumerate(cands)}
            ranked = [{**x, "candidate_rank": rank[x["tool"]]} for x in out.constrained]
            yield Retrieved(rec.query, out.prompt, ranked, None)


class FusionRanker:
    """Hybrid (b): reciprocal-rank fusion of the model's constrained ranking with a baseline's,
    each cut at ``depth``; the fused list keeps the best ``top``. Queries go through both in
    chunks and come back in input order."""

    def __init__(self, ev: "EvalModel", other: SystemRanker, k: float, depth: int, dec: DecodingConfig):
        from toolsense.decoding.retrieval import Retriever

        self.model = Retriever(ev.model, ev.tokenizer, ev.trie(), ev.index.depth(), ev.prompts, _constrained_only(dec))
        self.other, self.k, self.depth, self.top = other, k, depth, dec.beam_width
        self.chunk = 256 if dec.batch_size == "auto" else max(dec.batch_size, 1) * 4

    def run(self, queries: Sequence[Query]) -> Iterator[Retrieved]:
        from toolsense.decoding.retrieval import Retrieved

        for start in range(0, len(queries), self.chunk):
            part = list(queries[start : start + self.chunk])
            mine = {r.query.query_id: r for r in self.model.run(part)}
            theirs = {r.query.query_id: r for r in self.other.run(part)}
            for q in part:
                a, b = mine[q.query_id], theirs[q.query_id]
                lists = [[x["tool"] for x in r.constrained[: self.depth]] for r in (a, b)]
                ranks = [{t: i + 1 for i, t in reversed(list(enumerate(lst)))} for lst in lists]
                fused = [{"tool": t, "score": round(s, 6), "model_rank": ranks[0].get(t), "other_rank": ranks[1].get(t)}
                         for t, s in reciprocal_rank_fusion(lists, self.k)[: self.top]]
                yield Retrieved(q, a.prompt, fused, None)


def _needs_model(ev: Any, cfg: SystemConfig) -> None:
    if ev is None:
        raise ConfigError(f"system kind={cfg.kind} re-ranks with the parametric model: it needs parametric=true")


@SYSTEMS.register("restricted")
def restricted(ev: "EvalModel", catalog: Catalog, cfg: SystemConfig, dec: DecodingConfig) -> SystemRanker:
    """Hybrid (a): ``cfg.candidates`` proposes ``cfg.n_candidates`` tools, the model ranks them."""
    from toolsense.baselines.rankers import build_baseline

    _needs_model(ev, cfg)
    return RestrictedRanker(ev, build_baseline(catalog, cfg.candidates, cfg.n_candidates), cfg.n_candidates, dec)


@SYSTEMS.register("toolken")
def toolken(ev: "EvalModel | None", catalog: Catalog, cfg: SystemConfig, dec: DecodingConfig) -> SystemRanker:
    """A ToolkenGPT-style head (evaluation/toolken.py): its own frozen model and toolken rows from
    ``cfg.run``; constrained and free-form, without the parametric model."""
    from toolsense.decoding.batching import AUTO_CPU
    from toolsense.evaluation.context import pick_device
    from toolsense.evaluation.toolken import ToolkenRanker

    device = str(ev.device if ev is not None else pick_device(None))
    # one forward per query, no beams: "auto" is the CPU batch off a GPU and 4x it on one (a prompt's activations only)
    batch = dec.batch_size if dec.batch_size != "auto" else AUTO_CPU * (4 if device.startswith("cuda") else 1)
    return ToolkenRanker(cfg.run, dec.beam_width, batch, device)


STANDALONE = ("toolken",)
"""Kinds that rank without the parametric model (they load their own): allowed under parametric=false."""


def system_model_identity(ev: "EvalModel | None", cfg: SystemConfig) -> dict[str, Any] | None:
    """The fingerprint's ``model`` of a system's folder: the model that answers. The hybrids
    answer with the parametric model; a toolken head with its own run (read from its files)."""
    if cfg.kind == "toolken":
        from toolsense.evaluation.toolken import toolken_identity

        return toolken_identity(cfg.run)
    from toolsense.evaluation.fingerprint import model_identity

    return model_identity(ev) if ev is not None else None


@SYSTEMS.register("rrf")
def rrf(ev: "EvalModel", catalog: Catalog, cfg: SystemConfig, dec: DecodingConfig) -> SystemRanker:
    """Hybrid (b): the model's ranking fused with ``cfg.candidates``' by reciprocal rank."""
    from toolsense.baselines.rankers import build_baseline

    _needs_model(ev, cfg)
    depth = cfg.fuse_depth or dec.beam_width
    return FusionRanker(ev, build_baseline(catalog, cfg.candidates, depth), cfg.rrf_k, depth, dec)


def system_decoding(dec: DecodingConfig, cfg: SystemConfig) -> DecodingConfig:
    """The decoding a system's folder is scored and fingerprinted under: free-form only for the
    kinds that have a free-form mode (toolken), and only when ``decoding.free_form`` is on."""
    return dec if cfg.kind in FREE_FORM and dec.free_form else _constrained_only(dec)


FREE_FORM = ("toolken",)
"""Kinds whose rankers also return a free-form ranking (``Retrieved.free``); the hybrids do not."""


def build_system(ev: "EvalModel | None", catalog: Catalog, cfg: SystemConfig, dec: DecodingConfig) -> SystemRanker:
    return SYSTEMS.get(cfg.kind)(ev, catalog, cfg, dec)

