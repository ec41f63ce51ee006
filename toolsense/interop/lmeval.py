"""MCQ / QA probes as lm-evaluation-harness tasks, so a trained checkpoint is probed by lm-eval:

    python -m toolsense.export lmeval run=<run> benchmark=demo_mcq output_dir=outputs/lmeval
    lm_eval --model hf --model_args pretrained=outputs/lmeval/model --include_path outputs/lmeval \
        --tasks toolsense --apply_chat_template

Each task is files in one folder: ``<task>.yaml`` (``output_type: multiple_choice``, ``tag:
toolsense``), ``<task>.jsonl`` (one doc per probe item), ``<task>.tokens.json`` (the virtual
tokens its prompts name) and ``toolsense_lmeval.py`` (its ``custom_dataset`` loader, which reads
the files beside it: no absolute path in the task). A doc's ``prompt`` is the raw probe text (the
user turn, the tool named by its virtual token in ``token`` mode, the options in the seeded order
of rotation 0) with no chat template in it; the task's ``description`` is the run's system prompt.
lm-eval's ``--apply_chat_template`` renders them into exactly the prompt our evaluation scores
(``rendered_prompt`` in each doc; tests/evaluation/test_lmeval.py). Without that flag lm-eval
scores the raw text: another probe.

:func:`write_lmeval_model` writes the model under test, with its virtual tokens, to
``<out>/model`` (the folder to give lm-eval); a model whose own tokenizer lacks them (an untrained
base model, to which toolsense adds them in memory) is said at export, and the loader warns inside
lm-eval when ``pretrained`` lacks the tokens its prompts name (they would be split into sub-tokens).

Only the items an evaluation scored are exported when one is given (:func:`scored_items`, the
ids in ``<eval dir>/<benchmark>/<mode>/samples.jsonl``; ``python -m toolsense.export lmeval``
reads ``<run>/eval`` by default): ``make demo`` scores the first 64 of the 126 demo probe items,
and lm-eval's accuracy is comparable to ours only over the same items.

``choices: letters`` (default) scores the answer letters (A/B/C/D, or Yes/No) after the prompt,
as our probes do: lm-eval's ``acc`` is our accuracy. lm-eval moves the prompt's trailing newline
into each continuation; that adds the same log-prob to every choice, so the argmax, and the
accuracy, are unchanged. ``choices: options`` scores the option texts themselves (cloze style,
with ``acc_norm``): a different probe, not comparable to ours.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Collection, Literal

from toolsense.data.prompts import probe_answers, with_system
from toolsense.evaluation.benchmarks import Benchmark
from toolsense.evaluation.config import ProbeConfig
from toolsense.evaluation.context import EvalModel
from toolsense.evaluation.probes import permutation, probe_prompt
from toolsense.utils.io import DataError
from toolsense.utils.jsonl import JsonlStore
from toolsense.utils.paths import atomic_write_text

log = logging.getLogger(__name__)

TAG = "toolsense"
"""The group every task carries (``--tasks toolsense`` runs them all)."""
LOADER = "toolsense_lmeval"
LOADER_SOURCE = '''"""lm-eval custom_dataset loader of toolsense probe tasks (written by toolsense.interop.lmeval)."""
import json
import warnings
from pathlib import Path

import datasets


def load_docs(docs, tokens=None, pretrained=None, **_):
    """The task's docs: the JSONL file named by dataset_kwargs.docs, beside this file. lm-eval passes
    its model_args here (metadata): a ``pretrained`` tokenizer that lacks the virtual tokens the
    prompts name is warned about, since it splits them into sub-tokens and scores another prompt."""
    here = Path(__file__).parent
    if tokens and isinstance(pretrained, str):
        names = json.loads((here / tokens).read_text(encoding="utf-8"))
        try:
            from transformers import AutoTokenizer

            vocab = AutoTokenizer.from_pretrained(pretrained).get_vocab()
        except Exception as e:  # a model lm-eval loads some other way: nothing to check here
            vocab = None
            warnings.warn(f"toolsense: could not read the tokenizer of {pretrained} to check its virtual tokens ({e})")
        missing = [t for t in names if vocab is not None and t not in vocab]
        if missing:
            warnings.warn(f"toolsense: {pretrained} lacks {len(missing)} of the {len(names)} virtual tokens this task's prompts "
                          f"name (e.g. {missing[0]!r}); lm-eval splits them into sub-tokens and its log-probs are not the run's. "
                          "Give it the model folder `python -m toolsense.export lmeval` wrote (<output_dir>/model)")
    return {"test": datasets.load_dataset("json", data_files=str(here / docs), split="train")}
'''


def scored_items(folder: str | Path, bench: Benchmark) -> list[str] | None:
    """The ids of the probe items an evaluation scored in ``folder`` (``<eval dir>/<benchmark>/<mode>``,
    its samples.jsonl), in the benchmark's order; None when the folder holds no samples. Samples of
    another benchmark file (results.json's hash) or with an id the benchmark, as configured, lacks
    are a DataError naming the folder."""
    folder = Path(folder)
    if not (folder / "samples.jsonl").is_file():
        return None
    ids = set(JsonlStore(folder / "samples.jsonl", key="item_id", repair=False).by_key)
    res = folder / "results.json"
    sha = (json.loads(res.read_text(encoding="utf-8")).get("hashes") or {}).get("benchmark_sha256") if res.is_file() else None
    if sha and bench.sha256 and sha != bench.sha256:
        raise DataError(f"{folder}: scored on another file than benchmark {bench.name!r} ({bench.path}); "
                        "export with the benchmark that evaluation used")
    order = [it.item_id for it in bench.items]
    if missing := sorted(ids - set(order)):
        raise DataError(f"{folder}: {len(missing)} scored items are not in benchmark {bench.name!r} as configured "
                        f"({len(order)} items; e.g. {missing[0]!r}): export with the evaluation's benchmark settings "
                        "(its suite, or benchmark.limit)")
    return [i for i in order if i in ids]


def lmeval_docs(ev: EvalModel, bench: Benchmark, mode: str, cfg: ProbeConfig,
                choices: Literal["letters", "options"] = "letters", items: Collection[str] | None = None) -> list[dict[str, Any]]:
    """One lm-eval doc per probe item whose tool is in the index (and whose id is in ``items``,
    when given: :func:`scored_items`): ``prompt`` (the raw user turn), ``choices``, ``target``
    (index of the gold answer in ``choices``), the item's id, tool and options shown, and
    ``rendered_prompt`` (the chat-templated prompt our evaluation scores)."""
    docs = []
    keep = None if items is None else set(items)
    for item in bench.items:
        if item.tool not in ev.index.paths or (keep is not None and item.item_id not in keep):
            continue
        perm = permutation(item, bench.kind, cfg.seed)
        shown = [item.options[p] for p in perm]
        doc_choices = probe_answers(bench.kind, len(item.options)) if choices == "letters" else shown
        user = probe_prompt(ev, item, bench.kind, mode, perm, cfg, chat=False)[-1]["content"]
        docs.append({"id": item.item_id, "tool": item.tool, "prompt": user, "choices": list(doc_choices),
                     "target": perm.index(item.answer), "options_shown": shown,
                     "rendered_prompt": probe_prompt(ev, item, bench.kind, mode, perm, cfg)})
    return docs


def system_prompt(ev: EvalModel, cfg: ProbeConfig) -> str | None:
    """The system message our probes send (None when they send none): the task's description."""
    messages = with_system([], ev.prompts) if cfg.use_system_prompt else []
    return messages[0]["content"] if messages else None


def task_yaml(task: str, docs_file: str, tokens_file: str, choices: str, description: str | None) -> str:
    metrics = ["acc"] + (["acc_norm"] if choices == "options" else [])
    lines = [f"# lm-eval task of a toolsense probe (toolsense.interop.lmeval). Used by: lm_eval --model hf "
             f"--model_args pretrained=<output_dir>/model --include_path <this folder> --tasks {task} --apply_chat_template",
             f"task: {task}", f"tag: {TAG}", f"custom_dataset: !function {LOADER}.load_docs",
             "dataset_kwargs:", f"  docs: {json.dumps(docs_file)}", f"  tokens: {json.dumps(tokens_file)}",
             "test_split: test", "output_type: multiple_choice"]
    if description:
        lines.append(f"description: {json.dumps(description, ensure_ascii=False)}")
    lines += ["doc_to_text: prompt", "doc_to_choice: choices", "doc_to_target: target", 'target_delimiter: ""', "metric_list:"]
    lines += [f"  - metric: {m}\n    aggregation: mean\n    higher_is_better: true" for m in metrics]
    lines += ["metadata:", "  version: 2.0"]
    return "\n".join(lines) + "\n"


def write_lmeval_task(ev: EvalModel, bench: Benchmark, mode: str, cfg: ProbeConfig, out_dir: str | Path,
                      task: str | None = None, choices: Literal["letters", "options"] = "letters",
                      items: Collection[str] | None = None) -> Path:
    """Write ``<task>.yaml``, ``<task>.jsonl``, ``<task>.tokens.json`` and the loader into
    ``out_dir``; returns the YAML. ``task`` defaults to ``toolsense_<benchmark>`` (``_<mode>``
    added for a mode other than token); ``items``: only these item ids (the ones scored), None = all."""
    if bench.kind not in ("mcq", "qa"):
        raise ValueError(f"benchmark {bench.name!r} is a {bench.kind} benchmark; lm-eval tasks are written for mcq / qa probes")
    if choices not in ("letters", "options"):
        raise ValueError(f"choices must be letters or options, got {choices!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    task = task or f"toolsense_{bench.name}" + ("" if mode == "token" else f"_{mode}")
    docs = lmeval_docs(ev, bench, mode, cfg, choices, items)
    if not docs:
        raise ValueError(f"benchmark {bench.name!r}: no probe item's tool is in the index; nothing to export")
    named = sorted({tok for d in docs for tok in ev.index.paths[d["tool"]] if tok in d["prompt"]})
    atomic_write_text(out / f"{task}.jsonl", "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    atomic_write_text(out / f"{task}.tokens.json", json.dumps(named, ensure_ascii=False))
    atomic_write_text(out / f"{LOADER}.py", LOADER_SOURCE)
    return atomic_write_text(out / f"{task}.yaml", task_yaml(task, f"{task}.jsonl", f"{task}.tokens.json", choices,
                                                            system_prompt(ev, cfg)))


def write_lmeval_model(ev: EvalModel, out_dir: str | Path) -> Path:
    """Save the model under test with its virtual tokens (model + tokenizer, as evaluated) to
    ``<out_dir>/model``: the ``pretrained=`` to give lm-eval. When the model's own tokenizer lacked
    the index tokens (toolsense added them in memory, ``stage: untrained``) that is said: lm-eval
    given the original model would split each virtual token into sub-tokens."""
    path = Path(out_dir) / "model"
    if ev.source.get("stage") == "untrained":
        msg = (f"{ev.source.get('model')} lacks the index's {len(ev.index.tokens())} virtual tokens; toolsense added them "
               f"(mean-of-sub-token rows) and wrote the model with them to {path}: give lm-eval that folder, not "
               f"{ev.source.get('model')} (there they are split into sub-tokens and the log-probs differ)")
        log.warning(msg)
        print(f"warning: {msg}")
    ev.model.save_pretrained(path)
    ev.tokenizer.save_pretrained(path)
    return path
