"""Embedding drift of the virtual tokens between checkpoints (base → Stage 1 → Stage 2).

For each consecutive pair and each embedding matrix (input, and output when untied):
relative drift ‖E₂−E₁‖_F / ‖E₁‖_F over the virtual-token rows, against the same ratio over a
seeded random sample of base-vocabulary rows (how much ordinary tokens moved); and the mean
pairwise cosine similarity among virtual tokens at each checkpoint, with its change. "base" is
the base model with the index tokens freshly initialised (mean of sub-token embeddings) — the
rows Stage 1 starts from.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import torch

from toolsense.evaluation.config import DriftConfig
from toolsense.evaluation.outputs import json_text
from toolsense.index import ToolIndex, add_index_tokens
from toolsense.models import ModelConfig, load_model_and_tokenizer, read_embeddings
from toolsense.models.loading import load_tokenizer
from toolsense.utils.errors import MissingFile, UserError
from toolsense.utils.modeling import embeddings_tied
from toolsense.utils.progress import progress
from toolsense.utils.publish import publish
from toolsense.utils.rundir import RunDir

log = logging.getLogger(__name__)


def relative_drift(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖b − a‖_F / ‖a‖_F (rows aligned)."""
    return float((b.float() - a.float()).norm() / a.float().norm().clamp(min=1e-12))


def mean_pairwise_cosine(rows: torch.Tensor) -> float | None:
    """Mean cosine similarity over all distinct pairs of rows; None for fewer than two rows."""
    n = rows.shape[0]
    if n < 2:
        return None
    x = torch.nn.functional.normalize(rows.float(), dim=1)
    sim = x @ x.T
    return float((sim.sum() - sim.diagonal().sum()) / (n * (n - 1)))


def embedding_rows(model, tokenizer, index: ToolIndex) -> dict[str, torch.Tensor]:
    """The input (and, if untied, output) embedding matrices, rows in tokenizer id order."""
    inp = model.get_input_embeddings().weight.detach().cpu()
    mats = {"input": inp}
    if model.get_output_embeddings() is not None and not embeddings_tied(model):
        mats["output"] = model.get_output_embeddings().weight.detach().cpu()
    return mats


def load_checkpoint(run: Path, name: str, mcfg: ModelConfig, index: ToolIndex):
    """(model, tokenizer) of ``base`` (fresh tokens) or of ``<run>/<name>``."""
    mcfg = ModelConfig(**{**mcfg.__dict__, "dtype": "float32"})
    if name == "base":
        model, tok = load_model_and_tokenizer(mcfg, device="cpu")
        add_index_tokens(index, model, tok)
        return model, tok
    if not (run / name / "config.json").is_file():
        raise MissingFile(f"{run / name}: no model folder for checkpoint {name!r}")
    mats = read_embeddings(run / name)  # the two matrices from the safetensors, not the whole model in fp32
    if mats is not None:
        return mats, load_tokenizer(mcfg, str(run / name))
    return load_model_and_tokenizer(mcfg, path=run / name, device="cpu")


def row_terms(a: torch.Tensor, b: torch.Tensor) -> dict[str, list[float]]:
    """Per row, ‖b_i − a_i‖² and ‖a_i‖² (6 significant digits): the relative drift of any subset
    of rows is sqrt(Σ delta_sq) / sqrt(Σ norm_sq), so a bootstrap over tokens can redraw it."""
    a, b = a.float(), b.float()
    return {"delta_sq": [float(f"{x:.6g}") for x in ((b - a) ** 2).sum(1).tolist()],
            "norm_sq": [float(f"{x:.6g}") for x in (a**2).sum(1).tolist()]}


def compare(checkpoints: dict[str, dict[str, torch.Tensor]], virt_ids: torch.Tensor, base_ids: torch.Tensor,
            pair_ids: torch.Tensor) -> dict[str, Any]:
    """Drift between consecutive checkpoints and cosine structure at each one; per pair and
    matrix, ``rows`` holds the per-token terms (:func:`row_terms`) of the virtual and the base
    rows, from which the report draws its bootstrap-over-tokens intervals."""
    names = list(checkpoints)
    out: dict[str, Any] = {"cosine": {}, "pairs": []}
    for n in names:
        out["cosine"][n] = {m: mean_pairwise_cosine(e[pair_ids]) for m, e in checkpoints[n].items()}
    for a, b in zip(names, names[1:]):
        row = {"from": a, "to": b}
        for m in checkpoints[a]:
            if m not in checkpoints[b]:
                continue
            ea, eb = checkpoints[a][m], checkpoints[b][m]
            row[m] = {
                "virtual": relative_drift(ea[virt_ids], eb[virt_ids]),
                "base_vocab": relative_drift(ea[base_ids], eb[base_ids]),
                "cosine_change": None if None in (out["cosine"][b][m], out["cosine"][a][m])
                else out["cosine"][b][m] - out["cosine"][a][m],
                "rows": {"virtual": row_terms(ea[virt_ids], eb[virt_ids]), "base_vocab": row_terms(ea[base_ids], eb[base_ids])},
            }
        out["pairs"].append(row)
    return out


def plot(summary: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = summary["pairs"]
    labels = [f"{p['from']}→{p['to']}" for p in pairs]
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(pairs), 3.2))
    xs = range(len(pairs))
    ax.bar([x - 0.2 for x in xs], [p["input"]["virtual"] for p in pairs], 0.4, label="virtual tokens")
    ax.bar([x + 0.2 for x in xs], [p["input"]["base_vocab"] for p in pairs], 0.4, label="base-vocab sample")
    ax.set_xticks(list(xs), labels)
    ax.set_ylabel("relative drift ‖E₂−E₁‖/‖E₁‖ (input)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run_drift(run_dir: str | Path, cfg: DriftConfig, out_dir: str | Path) -> dict[str, Any]:
    """Compare ``cfg.checkpoints`` of a run; writes drift.json and drift.png under ``out_dir``."""
    from toolsense.catalog.config import CatalogConfig, load_from_config

    rd, out_dir = RunDir(run_dir).require(), Path(out_dir)
    run = rd.path
    mcfg = rd.section("model", ModelConfig)
    index = ToolIndex.load(rd.index_path, load_from_config(rd.section("catalog", CatalogConfig)))
    mats, virt_ids, n_base = {}, None, None
    if not index.tokens():
        raise UserError(f"{rd.index_path}: the index adds no tokens, so there are no virtual rows to measure drift on")
    for name in progress(cfg.checkpoints, desc="drift: checkpoints", unit="ckpt"):
        model, tok = load_checkpoint(run, name, mcfg, index)
        ids = torch.as_tensor(tok.convert_tokens_to_ids(index.tokens()))
        if virt_ids is None:
            virt_ids, n_base = ids, int(ids.min())
        elif not torch.equal(ids, virt_ids):
            raise ValueError(f"checkpoint {name!r} gives the virtual tokens other ids than {cfg.checkpoints[0]!r}")
        mats[name] = embedding_rows(model, tok, index)
        del model
    gen = torch.Generator().manual_seed(cfg.seed)
    base_ids = torch.randperm(n_base, generator=gen)[: cfg.sample_size]
    pair_ids = (virt_ids if len(virt_ids) <= cfg.max_pairs_tokens
                else virt_ids[torch.randperm(len(virt_ids), generator=gen)[: cfg.max_pairs_tokens]])
    summary = compare(mats, virt_ids, base_ids, pair_ids)
    summary.update(run=Path(os.path.relpath(run.resolve(), out_dir.resolve())).as_posix(), checkpoints=cfg.checkpoints,
                   n_virtual=len(virt_ids), n_base_sample=len(base_ids), seed=cfg.seed)
    summary["index_sharing"] = index.sharing()  # per_level: each distinct token counted once, whatever the tools sharing it
    summary["flat"] = {f"{p['from']}->{p['to']}/{m}/{k}": v for p in summary["pairs"] for m in ("input", "output")
                       if m in p for k, v in p[m].items() if k != "rows"}
    png = plot(summary, out_dir / f".drift.{os.getpid()}.tmp.png")
    try:  # drift.json and its plot as one set (utils/publish.py)
        publish(out_dir, {"drift.json": json_text(summary, out_dir / "drift.json"), "drift.png": png.read_bytes()}, job="evaluate")
    finally:
        png.unlink(missing_ok=True)
    log.info("drift written to %s", out_dir / "drift.json")
    return summary
