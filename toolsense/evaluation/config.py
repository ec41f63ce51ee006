"""Typed config sections of ``evaluate.py`` (``conf/evaluate.yaml`` and its groups)."""

from __future__ import annotations

import math
import string
from dataclasses import dataclass, field
from typing import Literal, Optional

from toolsense.catalog.config import CatalogConfig
from toolsense.data.prompts import PromptConfig
from toolsense.baselines.rankers import BM25_SCORERS, BM25_TOKENIZERS
from toolsense.evaluation.benchmarks import BenchmarkConfig
from toolsense.comparison.compare import CompareConfig
from toolsense.evaluation.systems import SYSTEMS
from toolsense.index.config import IndexConfig
from toolsense.models import ModelConfig
from toolsense.models.encoders import TEXT_TEMPLATES
from toolsense.tracking import LoggerConfig
from toolsense.utils.choices import StrEnum, choice


@dataclass
class DecodingConfig:
    beam_width: int = 50
    """Beams per query (ToolGen evaluates with 50)."""
    ks: list[int] = field(default_factory=lambda: [1, 5, 10, 50])
    """Cut-offs of Rc@k, Rf@k, IS@k, recall@k and NDCG@k; each must be <= beam_width."""
    batch_size: int = 8
    """Queries per batch (each carries beam_width beams after the prompt)."""
    free_form: bool = True
    """Also run the unconstrained search (needed for Rf and IS)."""
    fast_flat: bool = True
    """Flat indexes: constrained top-B from one prefill plus one decode step of the B candidates."""
    share_prefix: bool = True
    """Encode the prompts' common prefix (system prompt, chat template) once per batch."""
    max_new_tokens: Optional[int] = None
    """Free-form search length; None = the index depth + 1 (longer outputs cannot be tools)."""
    length_penalty: float = 1.0
    """Beam ranking of finished ids: summed log-prob / generated_length ** length_penalty (EOS
    counted), as Hugging Face's generate (default 1.0, as ToolGen ran it); 0.0 = the plain sum.
    Changes rankings only for variable-depth (clustered) indexes."""
    resamples: int = 1000
    """Bootstrap resamples over queries for the 95% intervals."""
    seed: int = 0
    """Bootstrap seed."""
    min_hits: int = 10
    """An IS@k resting on fewer constrained hits than this is flagged (``few_hits``) and not used
    for a verdict: a ratio of two or three hits says nothing (App. F's low-recall case)."""

    def __post_init__(self) -> None:
        if self.min_hits < 1:
            raise ValueError(f"decoding.min_hits must be >= 1, got {self.min_hits}")
        if self.beam_width < 1:
            raise ValueError(f"decoding.beam_width must be >= 1, got {self.beam_width}")
        if not self.ks:
            raise ValueError("decoding.ks is empty: give at least one cut-off, e.g. decoding.ks=[1,5,10]")
        bad = [k for k in self.ks if k < 1 or k > self.beam_width]
        if bad:
            raise ValueError(f"decoding.ks must lie in [1, beam_width={self.beam_width}], got {bad}")
        if len(set(self.ks)) < len(self.ks):
            raise ValueError(f"decoding.ks repeats a cut-off: {list(self.ks)}")
        if self.batch_size < 1:
            raise ValueError(f"decoding.batch_size must be >= 1, got {self.batch_size}")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ValueError(f"decoding.max_new_tokens must be >= 1 or null, got {self.max_new_tokens}")
        if self.resamples < 1:
            raise ValueError(f"decoding.resamples must be >= 1 (bootstrap resamples), got {self.resamples}")
        if not math.isfinite(self.length_penalty):
            raise ValueError(f"decoding.length_penalty must be a finite number, got {self.length_penalty}")


@dataclass
class ProbeConfig:
    modes: list[str] = field(default_factory=lambda: ["token", "control"])
    """token: the tool is named only by its virtual token(s); control: by its name instead;
    card: by its name and descriptions (the ceiling: is the probe answerable at all?)."""
    seed: int = 0
    """Seed of the per-item option shuffles (the permutation is recorded in samples.jsonl)."""
    batch_size: int = 16
    """Prompts per forward pass (circular MCQ packs batch_size // n_options items per batch)."""
    template: str = "Consider this tool: {tool}\n{question}\n{options}\nAnswer with {choices} only."
    """User turn; {tool} is the token(s) or, in control / card mode, the tool's name (and card)."""
    use_system_prompt: bool = False
    """Prepend the run's retrieval system prompt (off: probes are not retrieval requests)."""
    debias: Literal["none", "circular"] = "none"
    """none: the paper's single shuffled order; circular: also score MCQ under every cyclic
    rotation of the options (CircularEval) and QA with the Yes/No prior removed (mean-centred
    log-odds). Costs n_options x the MCQ forward passes; QA costs nothing extra."""
    flag_share: float = 0.9
    """A probe whose most frequent prediction exceeds this share of items is flagged in tables."""

    def __post_init__(self) -> None:
        bad = [m for m in self.modes if m not in PROBE_MODES]
        if bad:
            raise ValueError(f"probe.modes may only contain {list(PROBE_MODES)}, got {bad}")
        if len(set(self.modes)) < len(self.modes):
            raise ValueError(f"probe.modes repeats a mode: {list(self.modes)}")
        fields = {f for _, f, _, _ in string.Formatter().parse(self.template) if f is not None}
        unknown, absent = fields - TEMPLATE_FIELDS, {"tool", "question", "options"} - fields
        if unknown or absent:
            raise ValueError(f"probe.template may use {sorted(TEMPLATE_FIELDS)} and needs {{tool}}, {{question}} and "
                             f"{{options}}; unknown {sorted(unknown)}, absent {sorted(absent)}")
        if self.debias not in ("none", "circular"):
            raise ValueError(f"probe.debias must be 'none' or 'circular', got {self.debias!r}")
        if not 0 < self.flag_share <= 1:
            raise ValueError(f"probe.flag_share must lie in (0, 1], got {self.flag_share}")
        if self.batch_size < 1:
            raise ValueError(f"probe.batch_size must be >= 1, got {self.batch_size}")


PROBE_MODES = ("token", "control", "card")
TEMPLATE_FIELDS = {"tool", "question", "options", "choices"}


@dataclass
class BaselineConfig:
    kind: Literal["bm25", "dense", "openai"] = "bm25"
    """bm25 (bm25s over the tools' text), dense (sentence-transformers), openai (embeddings API)."""
    encoder: Optional[str] = None
    """dense: a local SentenceTransformer path (None = embedded all-MiniLM-L6-v2);
    openai: the embedding model name (None = text-embedding-3-large, the paper's te3l)."""
    backend: Literal["torch", "int8", "onnx"] = "torch"
    """dense only: torch = exact fp32; int8 = dynamic int8 quantisation of the Linear layers
    (CPU, faster, slightly different scores); onnx = sentence-transformers' ONNX backend
    (needs optimum[onnxruntime]). Part of the embedding cache key."""
    batch_size: int = 64
    """Queries scored per batch."""
    encode_batch_size: int = 256
    """dense/openai: tool texts per encoder batch (length-sorted) when the catalog is encoded."""
    label: Optional[str] = None
    """Row name in tables; default the kind."""
    document: str = "tool_text"
    """What each tool's document holds: a text template (``TEXT_TEMPLATES``; ``tool_text``,
    ``api_text``, ``toolgen`` = ToolGen's/ToolBench's corpus document, ``names``), listed with
    their fields in ``toolsense/models/encoders/documents.py``. Part of the embedding cache key."""
    tokenizer: str = "bm25s_en"
    """bm25 only (``BM25_TOKENIZERS``): ``bm25s_en`` (bm25s' words of 2+ characters, English
    stopwords out) or ``words`` (lower-cased words and punctuation, all kept: ToolGen's NLTK split)."""
    scorer: str = "bm25s"
    """bm25 only (``BM25_SCORERS``): ``bm25s`` (Lucene BM25) or ``okapi`` (rank_bm25's
    ``BM25Okapi``, ToolGen's: k1 1.5, b 0.75, epsilon 0.25 for frequent terms)."""

    def __post_init__(self) -> None:
        self.document = TEXT_TEMPLATES.check(self.document, "baseline.document")
        self.tokenizer = BM25_TOKENIZERS.check(self.tokenizer, "baseline.tokenizer")
        self.scorer = BM25_SCORERS.check(self.scorer, "baseline.scorer")
        if self.kind != "bm25" and (self.tokenizer, self.scorer) != ("bm25s_en", "bm25s"):
            raise ValueError(f"baseline.tokenizer and baseline.scorer apply to kind=bm25 only, not kind={self.kind}")
        if self.backend not in ("torch", "int8", "onnx"):
            raise ValueError(f"baseline.backend must be torch, int8 or onnx, got {self.backend!r}")
        if self.backend != "torch" and self.kind != "dense":
            raise ValueError(f"baseline.backend={self.backend} applies to kind=dense only, not kind={self.kind}")
        if self.batch_size < 1 or self.encode_batch_size < 1:
            raise ValueError(f"baseline.batch_size and baseline.encode_batch_size must be >= 1, got {self.batch_size}, {self.encode_batch_size}")

    def identity(self) -> dict[str, Optional[str]]:
        """What the baseline's rankings depend on (its fingerprint): kind and encoder, plus the
        document, tokenizer and scorer where they differ from the defaults (so folders written
        before these settings existed still resume)."""
        out: dict[str, Optional[str]] = {"kind": self.kind, "encoder": self.encoder}
        for name, default in (("document", "tool_text"), ("tokenizer", "bm25s_en"), ("scorer", "bm25s")):
            if getattr(self, name) != default:
                out[name] = getattr(self, name)
        return out


@dataclass
class SystemConfig:
    """A system beside the parametric model and the baselines (``SYSTEMS`` in systems.py;
    ``conf/system/*.yaml``); docs/systems.md says how to add one."""

    kind: str = "restricted"
    """``restricted``: the model's constrained search over the ``candidates`` baseline's top
    ``n_candidates`` tools; ``rrf``: reciprocal-rank fusion of the model's ranking with it."""
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

    def identity(self) -> dict:
        """What the system's rankings depend on besides the model and decoding (its fingerprint)."""
        out: dict = {"kind": self.kind, "candidates": self.candidates.identity()}
        out.update({"n_candidates": self.n_candidates} if self.kind == "restricted" else
                   {"rrf_k": self.rrf_k, "fuse_depth": self.fuse_depth} if self.kind == "rrf" else {})
        return out


@dataclass
class DriftConfig:
    checkpoints: list[str] = field(default_factory=lambda: ["base", "stage1", "stage2"])
    """Stages of the run compared in order; 'base' = the base model with freshly initialised tokens."""
    sample_size: int = 2000
    """Base-vocabulary rows sampled (seeded) as the reference for relative drift."""
    max_pairs_tokens: int = 2000
    """Virtual tokens used for the mean pairwise cosine (a seeded sample beyond this)."""
    seed: int = 0

    def __post_init__(self) -> None:
        bad = [c for c in self.checkpoints if c not in ("base", "stage1", "stage2")]
        if bad or len(self.checkpoints) < 2 or len(set(self.checkpoints)) < len(self.checkpoints):
            raise ValueError(f"drift.checkpoints must list two or more of base, stage1, stage2, each once; got {list(self.checkpoints)}")
        if self.sample_size < 1 or self.max_pairs_tokens < 2:
            raise ValueError(f"drift.sample_size must be >= 1 and drift.max_pairs_tokens >= 2, got {self.sample_size}, "
                             f"{self.max_pairs_tokens}")


@dataclass
class AnnotateConfig:
    items: int = 100
    """Items sampled (seeded) from each benchmark into its sheet; all when the benchmark has fewer."""
    raters: int = 3
    """Empty rater columns in the sheet (rater_1 ... rater_<raters>)."""
    seed: int = 0
    """Seed of the item sample and of the MCQ option order shown to raters."""
    retrieval_categories: list[str] = field(default_factory=lambda: ["yes", "partly", "no"])
    """Answers a rater may give for a retrieval item: do the gold tools serve the query?"""
    sheets: list[str] = field(default_factory=list)
    """task=kappa: the filled sheets (CSV) to compute κ from."""
    keys: list[str] = field(default_factory=list)
    """task=kappa: the answer keys (``<benchmark>_key.csv``, written by task=annotate beside each
    sheet and kept from the raters); empty = any key file lying beside a sheet."""

    def __post_init__(self) -> None:
        if self.items < 1 or self.raters < 2:
            raise ValueError(f"annotate.items must be >= 1 and annotate.raters >= 2 (got {self.items}, {self.raters})")
        cats = [c.strip().casefold() for c in self.retrieval_categories]
        if len(cats) < 2 or len(set(cats)) < len(cats) or not all(cats):
            raise ValueError(f"annotate.retrieval_categories needs two or more distinct, non-empty answers, got "
                             f"{list(self.retrieval_categories)}")



class Task(StrEnum):
    evaluate = "evaluate"
    """Retrieval benchmarks (constrained + free-form), MCQ/QA probes and baselines: one table."""
    drift = "drift"
    """Embedding drift base -> stage1 -> stage2 of ``run`` (drift.py)."""
    compare = "compare"
    """One ablation table over earlier evaluations (compare.py)."""
    annotate = "annotate"
    """Rating sheets of the configured benchmarks for human raters (annotate.py)."""
    kappa = "kappa"
    """Fleiss' kappa per benchmark from filled rating sheets (``annotate.sheets``)."""


@dataclass
class EvaluateConfig:
    """Schema of ``conf/evaluate.yaml`` (registered as ``evaluate_schema``): every default is
    here; the YAML holds only the defaults list and what differs."""

    model: ModelConfig = field(default_factory=ModelConfig)
    """Untrained evaluation (no ``run``): the base model that gets the index's tokens fresh."""
    catalog: CatalogConfig = field(default_factory=CatalogConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    prompts: PromptConfig = field(default_factory=PromptConfig)
    """Untrained evaluation only; a run brings its own."""
    benchmark: Optional[BenchmarkConfig] = None
    """One benchmark (``benchmark=<name>``); ignored when a suite sets ``benchmarks``."""
    benchmarks: dict[str, BenchmarkConfig] = field(default_factory=dict)
    """A suite's label -> benchmark map."""
    baseline: Optional[BaselineConfig] = None
    baselines: dict[str, BaselineConfig] = field(default_factory=dict)
    """A suite's label -> baseline map; replaces ``baseline``."""
    system: Optional[SystemConfig] = None
    """One system (``system=<name>``, conf/system/): a hybrid evaluated beside the model."""
    systems: dict[str, SystemConfig] = field(default_factory=dict)
    """A suite's label -> system map; replaces ``system``."""
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    drift: DriftConfig = field(default_factory=DriftConfig)
    compare: CompareConfig = field(default_factory=CompareConfig)
    annotate: AnnotateConfig = field(default_factory=AnnotateConfig)
    run: Optional[str] = None
    """Training run directory (config.yaml, index.json, stage1/, stage2/)."""
    stage: str = "stage2"
    """Which checkpoint of the run to evaluate."""
    device: Optional[str] = None
    """None = this process's GPU if any, else cpu."""
    dtype: Optional[str] = None
    """Override the run's model dtype (e.g. float32)."""
    task: Task = Task.evaluate
    parametric: bool = True
    """false = baselines only (no LLM is loaded)."""
    overwrite: bool = False
    """An output folder holding another evaluation's samples is refused; true deletes that
    evaluation's files and starts it over."""
    output_dir: Optional[str] = None
    """None = Hydra's (timestamped) output dir; outside Hydra, outputs/evaluate."""

    def __post_init__(self) -> None:
        self.task = choice(Task, self.task, "task")
        if self.stage not in ("stage1", "stage2"):
            raise ValueError(f"stage must be stage1 or stage2 (a checkpoint of run), got {self.stage!r}")
        if self.task == Task.drift and not self.run:
            raise ValueError("task=drift needs run=<training run directory>")
        if self.task == Task.evaluate and not self.parametric and self.system_sections():
            raise ValueError(f"systems {sorted(self.system_sections())} re-rank with the parametric model: "
                             "they need parametric=true (or drop system= / systems=)")
        clash = set(self.system_sections()) & (set(self.baseline_sections()) | {"model", *PROBE_MODES})
        if clash:
            raise ValueError(f"system labels {sorted(clash)} are taken by a baseline, the model or a probe mode "
                             "(each names an output folder): set system.label / systems.<name>.label")

    def benchmark_sections(self) -> dict[str, BenchmarkConfig]:
        """The suite's benchmarks, else the single one under its label (or loader)."""
        if self.benchmarks:
            return dict(self.benchmarks)
        return {self.benchmark.label or "benchmark": self.benchmark} if self.benchmark is not None else {}

    def baseline_sections(self) -> dict[str, BaselineConfig]:
        if self.baselines:
            return dict(self.baselines)
        return {self.baseline.label or self.baseline.kind: self.baseline} if self.baseline is not None else {}

    def system_sections(self) -> dict[str, SystemConfig]:
        """The suite's systems, else the single one under its label (or kind)."""
        if self.systems:
            return dict(self.systems)
        return {self.system.label or self.system.kind: self.system} if self.system is not None else {}


def register_configs() -> None:
    """Register :class:`EvaluateConfig` as ``evaluate_schema`` (evaluate.yaml's first default)."""
    from toolsense.utils.hydra import register_schema

    register_schema("evaluate_schema", EvaluateConfig)
