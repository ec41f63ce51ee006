"""Results in the formats other tools read: TREC run files and qrels (``trec_eval``, ``ranx``,
``pytrec_eval``) and a catalog + benchmark in BEIR's layout (BEIR / MTEB retrievers).

Every retrieval evaluation folder gets, beside its ``samples.jsonl``::

    run.constrained.trec    qid Q0 docid rank score tag   the constrained ranking
    run.free.trec           the same for the free-form ranking (parametric systems only)
    qrels.trec              qid 0 docid 1                 the gold tools of every scored query

written from ``samples.jsonl`` alone (so :func:`export_tree` also exports results made before
this existed). The files are built so that trec_eval's measures are *ours*, exactly:

- ``success_k`` = hit@k (Rc@k / Rf@k), ``recall_k`` = recall@k, ``ndcg_cut_k`` = NDCG@k
  (binary gains, log2(rank + 1) discount, the ideal DCG over all min(k, |gold|) gold tools: the
  same definition as :func:`toolsense.metrics.ranking.ndcg_at`).
- The score column is the system's own score: a beam's ranking score (its log-probability,
  length-normalised as the search ranks it: ``decoding.length_penalty``), BM25's or the dense
  cosine, a hybrid's fused score. trec_eval and ranx order by *score*, not by the rank column
  (trec_eval breaks ties by docid), so tied scores are separated by steps of :data:`TIE_STEP`
  in our ranking's order: the order read back is ours, and score-based fusion (ranx's wsum,
  min-max normalisation) sees the real scores.
- A baseline fills its top-k with zero-score tools (no query term in them) in catalog order;
  that padding is kept by default: our metrics count those slots, our hybrids fuse them, and a
  query whose BM25 ranking is all padding still has its lines, so trec_eval (without ``-c``),
  ``ranx.evaluate`` and ``ranx.fuse`` see every scored query and give our numbers exactly.
  ``keep_padding=False`` (``trec --cut-padding``) cuts it (:func:`without_padding`).
- Every scored query has at least one line in every run file: a ranking left empty (all padding,
  cut) is written as the one unjudged placeholder :data:`NO_DOC` (rank 1, score 0), so no tool
  averages over fewer queries than ours and fusion never meets a query missing from one run.
- An output that is not a tool (free-form text) keeps its rank slot as ``_invalid_r<rank>``, and
  a tool repeated lower in the same ranking as ``_repeat_r<rank>``: both are unjudged, so they
  earn no gain but push what follows down, as in our metrics (a run file may hold a docid once).
- Ids are whitespace-free (the TREC format splits on whitespace): :func:`doc_id` percent-encodes
  whitespace and ``%`` in tool names and query ids; ``urllib.parse.unquote`` inverts it.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import unquote

from toolsense.catalog import Catalog
from toolsense.utils.io import DataError
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.paths import atomic_write_text

log = logging.getLogger(__name__)

MODES = {"constrained": "run.constrained.trec", "free": "run.free.trec"}
"""Decoding mode (the key of its ranking in a sample row) -> its run file."""
QRELS = "qrels.trec"
INVALID, REPEAT = "_invalid_r", "_repeat_r"
NO_DOC = "_none"
"""The placeholder docid of a query whose ranking is empty (unjudged: it earns nothing)."""
_ESCAPE = re.compile(r"[%\s]")


def doc_id(name: str) -> str:
    """A tool name or query id without whitespace: ``%``, spaces, tabs and newlines
    percent-encoded (``SkyCast Weather&&now`` -> ``SkyCast%20Weather&&now``); reversible."""
    return _ESCAPE.sub(lambda m: "%{:02X}".format(ord(m.group())), name)


def from_doc_id(docid: str) -> str:
    return unquote(docid)


TIE_STEP = 1e-6
"""What separates tied scores in a run file (scores are written with 7 decimals)."""


def strictly_decreasing(scores: Sequence[float]) -> list[float]:
    """``scores`` (best first, non-increasing) with each tie lowered by :data:`TIE_STEP` below
    the score before it, so ordering by score gives back this order; distinct scores stay."""
    out: list[float] = []
    for s in scores:
        s = float(s)
        out.append(round(s if not out or s < out[-1] - TIE_STEP / 2 else out[-1] - TIE_STEP, 7))
    return out


def _score_text(x: float) -> str:
    return f"{x:.7f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


def run_lines(qid: str, ranking: Sequence[str | None], tag: str, scores: Sequence[float] | None = None) -> list[str]:
    """The TREC run lines of one ranking: every slot kept (a non-tool as ``_invalid_r<rank>``,
    a repeated tool as ``_repeat_r<rank>``), with ``scores`` (the system's, best first; ties
    separated: :func:`strictly_decreasing`), or ``len - rank + 1`` when none are given; an empty
    ranking is the one line of :data:`NO_DOC`."""
    if not ranking:  # no tool retrieved: one placeholder line keeps the query in the run
        return [f"{doc_id(qid)} Q0 {NO_DOC} 1 0 {tag}"]
    seen: set[str] = set()
    lines, n = [], len(ranking)
    if scores is not None and len(scores) != n:
        raise ValueError(f"run_lines: {n} tools but {len(scores)} scores")
    shown = strictly_decreasing(scores) if scores is not None else [float(n - r) for r in range(n)]
    q = doc_id(qid)
    for rank, tool in enumerate(ranking, start=1):
        if tool is None:
            docid = f"{INVALID}{rank}"
        elif tool in seen:
            docid = f"{REPEAT}{rank}"
        else:
            seen.add(tool)
            docid = doc_id(tool)
        lines.append(f"{q} Q0 {docid} {rank} {_score_text(shown[rank - 1])} {tag}")
    return lines


def without_padding(entries: Sequence[dict]) -> list[dict]:
    """A ranking without its trailing zero-score entries that are not beams (no ``logprob``): a
    baseline's padding of tools it found no evidence for, in catalog order. A beam's score of 0
    (probability ~1) is kept."""
    end = len(entries)
    while end and "logprob" not in entries[end - 1] and float(entries[end - 1].get("score", 1.0)) == 0.0:
        end -= 1
    return list(entries[:end])


def qrels_lines(qid: str, gold: Iterable[str]) -> list[str]:
    q = doc_id(qid)
    return [f"{q} 0 {doc_id(t)} 1" for t in sorted(set(gold))]


def retrieval_rows(samples: str | Path) -> list[dict[str, Any]]:
    """The rows of a retrieval ``samples.jsonl`` (a probe's rows have no ranking: [])."""
    rows = list(JsonlStore(Path(samples), key="item_id", repair=False).by_key.values())
    return [r for r in rows if "constrained" in r and "gold" in r]


def write_trec(eval_dir: str | Path, tag: str | None = None, keep_padding: bool = True) -> dict[str, str]:
    """Write the run files and qrels of the retrieval evaluation in ``eval_dir`` from its
    ``samples.jsonl`` (:func:`trec_texts`). Returns ``{mode or "qrels": file name}`` of what was
    written ({} for a probe or an empty folder)."""
    texts = trec_texts(eval_dir, tag, keep_padding)
    for fname, text in texts.items():
        atomic_write_text(Path(eval_dir) / fname, text)
    return {mode: fname for mode, fname in [*MODES.items(), ("qrels", QRELS)] if fname in texts}


def trec_texts(eval_dir: str | Path, tag: str | None = None, keep_padding: bool = True) -> dict[str, str]:
    """``{file name: text}`` of the run files and qrels of the retrieval evaluation in ``eval_dir``,
    from its ``samples.jsonl``, with the system's scores; ``tag`` (the run-name column) defaults to
    results.json's system; a baseline's zero-score padding is kept unless ``keep_padding=False``
    (:func:`without_padding`). Every row's query has a line in every run file. Empty for a probe
    or an empty folder."""
    eval_dir = Path(eval_dir)
    samples = eval_dir / "samples.jsonl"
    if not samples.is_file():
        return {}
    rows = retrieval_rows(samples)
    if not rows:
        return {}
    if tag is None:
        res = eval_dir / "results.json"
        tag = json.loads(res.read_text(encoding="utf-8")).get("system", eval_dir.name) if res.is_file() else eval_dir.name
    tag = doc_id(str(tag))
    texts = {}
    for mode, fname in MODES.items():
        if any(r.get(mode) is None for r in rows):
            continue  # a baseline has no free-form ranking
        lines = []
        for r in rows:
            ranking = r[mode] if keep_padding else without_padding(r[mode])
            lines += run_lines(r["item_id"], [x["tool"] for x in ranking], tag, [float(x.get("score", 0.0)) for x in ranking])
        texts[fname] = "\n".join(lines) + "\n"
    texts[QRELS] = "\n".join(ln for r in rows for ln in qrels_lines(r["item_id"], r["gold"])) + "\n"
    return texts


def export_tree(root: str | Path, keep_padding: bool = True) -> dict[Path, list[str]]:
    """:func:`write_trec` in every folder under ``root`` that holds a retrieval samples.jsonl;
    returns ``{folder: the file names written there}`` (a baseline's folder has no free-form run)."""
    done = {}
    for samples in sorted(Path(root).rglob("samples.jsonl")):
        if written := write_trec(samples.parent, keep_padding=keep_padding):
            done[samples.parent] = list(written.values())
    return done


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """A TREC run file as ``{qid: {docid: score}}`` (the shape pytrec_eval and ranx take);
    a malformed line is a DataError naming file:line."""
    out: dict[str, dict[str, float]] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise DataError(f"{path}:{n}: a run line has 6 fields (qid Q0 docid rank score tag), got {len(parts)}")
        out.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    return out


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """A qrels file (TREC ``qid 0 docid rel`` or BEIR's ``query-id<TAB>corpus-id<TAB>score``
    with its header) as ``{qid: {docid: rel}}``."""
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split("\t") if "\t" in line else line.split()
        if not parts or (n == 1 and parts[0] == "query-id"):
            continue
        if len(parts) not in (3, 4):
            raise DataError(f"{path}:{n}: a qrels line has 4 fields (TREC) or 3 (BEIR tsv), got {len(parts)}")
        qid, docid, rel = parts[0], parts[-2], parts[-1]
        out.setdefault(qid, {})[docid] = int(rel)
    return out


# ---- BEIR ------------------------------------------------------------------------------------


def write_beir(catalog: Catalog, queries: Sequence[Any], out_dir: str | Path, split: str = "test",
               title: bool = False) -> dict[str, int]:
    """``catalog`` and retrieval ``queries`` (``catalog.Query``) in BEIR's layout under ``out_dir``:
    ``corpus.jsonl`` ({_id, title, text}: the tool's id and :meth:`Tool.text`, the text our
    baselines index), ``queries.jsonl`` ({_id, text}) and ``qrels/<split>.tsv`` (header
    ``query-id corpus-id score``). ``title`` is empty unless ``title=True`` ("service / API"):
    BEIR's encoders prepend a title to the text, and Tool.text already opens with those names, so a
    filled title makes BEIR score another document than toolsense does. Tool ids are :func:`doc_id`
    of the name and query ids :func:`doc_id` of the query id: the ids of the TREC files. A query id
    equal to a tool id is a DataError (BEIR drops a retrieved document whose id is its query's), as
    is a gold tool not in the catalog (its qrels would point at no document)."""
    out = Path(out_dir)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = [{"_id": doc_id(t.name), "title": f"{t.tool_title or t.service} / {t.api_title or t.api}" if title else "",
               "text": t.text(), "metadata": {"name": t.name, "category": t.category}} for t in catalog]
    known = {t.name for t in catalog}
    tool_ids = {c["_id"] for c in corpus}
    qrows, qrels = [], []
    for q in queries:
        missing = [t for t in q.tools if t not in known]
        if missing:
            raise DataError(f"query {q.query_id!r}: gold tool {missing[0]!r} is not in the catalog; "
                            "export it with the catalog the benchmark was written for")
        qid = doc_id(q.query_id)
        if qid in tool_ids:
            raise DataError(f"query {q.query_id!r}: its id is also a tool's id; BEIR would drop that tool from the "
                            "query's results (ignore_identical_ids). Rename the query")
        qrows.append({"_id": qid, "text": q.text, "metadata": {"query_id": q.query_id}})
        qrels += [f"{qid}\t{doc_id(t)}\t1" for t in sorted(set(q.tools))]
    if len({r["_id"] for r in qrows}) != len(qrows):
        raise DataError("the benchmark repeats query ids; BEIR needs unique ids")
    atomic_write_text(out / "corpus.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in corpus))
    atomic_write_text(out / "queries.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in qrows))
    atomic_write_text(out / "qrels" / f"{split}.tsv", "query-id\tcorpus-id\tscore\n" + "".join(x + "\n" for x in qrels))
    return {"corpus": len(corpus), "queries": len(qrows), "qrels": len(qrels)}
