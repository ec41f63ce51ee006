"""MCQ / QA probes as lm-evaluation-harness tasks, so a trained checkpoint is probed by lm-eval:

    python -m toolsense.export lmeval run=<run> benchmark=demo_mcq output_dir=outputs/lmeval
    lm_eval --model hf --model_args pretrained=<run>/stage2 --include_path outputs/lmeval --tasks toolsense_mcq

Each task is three files in one folder: ``<task>.yaml`` (``output_type: multiple_choice``),
``<task>.jsonl`` (one doc per probe item) and ``toolsense_lmeval.py`` (its ``custom_dataset``
loader, which reads the docs beside it: no absolute path in the task). A doc's ``prompt`` is the
probe prompt exactly as our evaluation renders it (probes.probe_prompt: the run's chat template
and system prompt, the tool named by its virtual token in ``token`` mode, the options in the
seeded order of rotation 0), so do NOT pass ``--apply_chat_template``: it is applied already.

``choices: letters`` (default) scores the answer letters (A/B/C/D, or Yes/No) after the prompt,
as our probes do: lm-eval's ``acc`` is our accuracy (tests/evaluation/test_lmeval.py). lm-eval
moves the prompt's trailing newline into each continuation; that adds the same log-prob to every
choice, so the argmax, and the accuracy, are unchanged. ``choices: options`` scores the option
texts themselves (cloze style, with ``acc_norm``): a different probe, not comparable to ours.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from toolsense.data.prompts import probe_answers
from toolsense.evaluation.benchmarks import Benchmark
from toolsense.evaluation.config import ProbeConfig
from toolsense.evaluation.context import EvalModel
from toolsense.evaluation.probes import permutation, probe_prompt
from toolsense.utils.paths import atomic_write_text

LOADER = "toolsense_lmeval"
LOADER_SOURCE = '''"""lm-eval custom_dataset loader of toolsense probe tasks (written by toolsense.interop.lmeval)."""
from pathlib import Path

import datasets


def load_docs(docs, **_):
    """The task's docs: the JSONL file named by dataset_kwargs.docs, beside this file."""
    return {"test": datasets.load_dataset("json", data_files=str(Path(__file__).parent / docs), split="train")}
'''


def lmeval_docs(ev: EvalModel, bench: Benchmark, mode: str, cfg: ProbeConfig,
                choices: Literal["letters", "options"] = "letters") -> list[dict[str, Any]]:
    """One lm-eval doc per probe item whose tool is in the index: ``prompt``, ``choices``,
    ``target`` (index of the gold answer in ``choices``), and the item's id, tool and options shown."""
    docs = []
    for item in bench.items:
        if item.tool not in ev.index.paths:
            continue
        perm = permutation(item, bench.kind, cfg.seed)
        shown = [item.options[p] for p in perm]
        doc_choices = probe_answers(bench.kind, len(item.options)) if choices == "letters" else shown
        docs.append({"id": item.item_id, "tool": item.tool, "prompt": probe_prompt(ev, item, bench.kind, mode, perm, cfg),
                     "choices": list(doc_choices), "target": perm.index(item.answer), "options_shown": shown})
    return docs


def task_yaml(task: str, docs_file: str, choices: str) -> str:
    metrics = ["acc"] + (["acc_norm"] if choices == "options" else [])
    lines = [f"# lm-eval task of a toolsense probe (toolsense.interop.lmeval). Used by: lm_eval --model hf "
             f"--model_args pretrained=<run>/stage2 --include_path <this folder> --tasks {task}",
             f"task: {task}", f"custom_dataset: !function {LOADER}.load_docs",
             "dataset_kwargs:", f"  docs: {json.dumps(docs_file)}", "test_split: test", "output_type: multiple_choice",
             "doc_to_text: prompt", "doc_to_choice: choices", "doc_to_target: target", 'target_delimiter: ""',
             "metric_list:"]
    lines += [f"  - metric: {m}\n    aggregation: mean\n    higher_is_better: true" for m in metrics]
    lines += ["metadata:", "  version: 1.0"]
    return "\n".join(lines) + "\n"


def write_lmeval_task(ev: EvalModel, bench: Benchmark, mode: str, cfg: ProbeConfig, out_dir: str | Path,
                      task: str | None = None, choices: Literal["letters", "options"] = "letters") -> Path:
    """Write ``<task>.yaml``, ``<task>.jsonl`` and the loader into ``out_dir``; returns the YAML.
    ``task`` defaults to ``toolsense_<benchmark>`` (``_<mode>`` added for a mode other than token)."""
    if bench.kind not in ("mcq", "qa"):
        raise ValueError(f"benchmark {bench.name!r} is a {bench.kind} benchmark; lm-eval tasks are written for mcq / qa probes")
    if choices not in ("letters", "options"):
        raise ValueError(f"choices must be letters or options, got {choices!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    task = task or f"toolsense_{bench.name}" + ("" if mode == "token" else f"_{mode}")
    docs = lmeval_docs(ev, bench, mode, cfg, choices)
    if not docs:
        raise ValueError(f"benchmark {bench.name!r}: no probe item's tool is in the index; nothing to export")
    atomic_write_text(out / f"{task}.jsonl", "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    atomic_write_text(out / f"{LOADER}.py", LOADER_SOURCE)
    return atomic_write_text(out / f"{task}.yaml", task_yaml(task, f"{task}.jsonl", choices))
