"""``python -m toolsense.export``: toolsense's data and results in the formats other tools read.

    python -m toolsense.export beir catalog=toolbench benchmark=toolbench_g1 output_dir=outputs/beir
    python -m toolsense.export beir suite=demo                  # every retrieval benchmark of a suite
    python -m toolsense.export beir --title catalog=demo benchmark=demo_standard   # titles "service / API" filled
    python -m toolsense.export trec outputs/demo/eval           # run files + qrels of existing results
    python -m toolsense.export trec --cut-padding outputs/demo/eval    # ... without baselines' zero-score padding
    python -m toolsense.export lmeval run=<run> benchmark=demo_mcq output_dir=outputs/lmeval   # probes as lm-eval tasks
    python -m toolsense.export lmeval --scored=outputs/demo/eval run=<run> suite=demo   # ... the items that evaluation scored

``beir`` composes ``conf/evaluate.yaml`` with the overrides given (the same ``catalog=`` /
``benchmark=`` / ``suite=`` groups and dotted keys as evaluate.py) and writes, per retrieval
benchmark, ``<output_dir>/<benchmark>/{corpus.jsonl, queries.jsonl, qrels/test.tsv}``
(reporting/export.py: write_beir; titles empty unless ``--title``). ``trec`` writes ``run.constrained.trec``,
``run.free.trec`` (parametric systems only) and ``qrels.trec`` beside every retrieval ``samples.jsonl`` under the
folders given, every scored query in every file, baselines' zero-score padding kept unless ``--cut-padding``
(reporting/export.py: export_tree); evaluations made now write them themselves. ``lmeval``
loads the model under test as evaluate.py does (``run=`` or ``model=``) and writes each MCQ / QA
benchmark, in each ``probe.modes``, as an lm-eval task into ``output_dir``, and the model with its
virtual tokens into ``<output_dir>/model`` (interop/lmeval.py): only the items the evaluation in
``--scored=<dir>`` scored (``<dir>/<benchmark>/<mode>/samples.jsonl``; default ``<run>/eval``, the
folder of ``make demo`` and of train.py's evaluation; ``--scored=none``: every item configured).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

USAGE = __doc__.split("\n\n")[1]


def _compose(overrides: Sequence[str], default_out: str):
    """evaluate.yaml composed with ``overrides`` (``output_dir=`` taken out): (config, output dir)."""
    from toolsense.evaluation.config import compose_evaluate

    ovr = [o for o in overrides if not o.startswith("output_dir=")]
    out = Path(next((o.split("=", 1)[1] for o in overrides if o.startswith("output_dir=")), default_out))
    return compose_evaluate(ovr), out


def beir(overrides: Sequence[str]) -> dict[str, dict[str, int]]:
    from toolsense.catalog.config import load_from_config
    from toolsense.evaluation.benchmarks import load_benchmarks
    from toolsense.evaluation.config import catalog_section
    from toolsense.reporting.export import write_beir

    title = "--title" in overrides
    overrides = [o for o in overrides if o != "--title"]
    cfg, out = _compose(overrides, "outputs/beir")
    catalog = load_from_config(catalog_section(cfg.catalog, cfg.run))
    written = {}
    for label, bench in load_benchmarks(cfg.benchmark, cfg.benchmarks).items():
        if bench.kind != "retrieval":
            print(f"{label}: a {bench.kind} probe, not a retrieval benchmark; BEIR has no layout for it (skipped)")
            continue
        written[label] = write_beir(catalog, bench.items, out / label, title=title)
        c = written[label]
        print(f"wrote {out / label}: {c['corpus']} tools, {c['queries']} queries, {c['qrels']} qrels")
    if not written:
        raise SystemExit("no retrieval benchmark in the configuration; name one with benchmark=<name> or suite=<name>")
    return written


def trec(args: Sequence[str]) -> list[Path]:
    from toolsense.reporting.export import export_tree

    options = {"--cut-padding", "--keep-padding"}  # --keep-padding: the default, still accepted
    roots = [a for a in args if a not in options]
    if bad := [a for a in roots if a.startswith("-")]:
        raise SystemExit(f"trec: unknown option {bad[0]} (the one option is --cut-padding)")
    if not roots:
        raise SystemExit("trec: name the results folders to export, e.g. python -m toolsense.export trec outputs/demo/eval")
    done = {d: files for root in roots for d, files in export_tree(root, keep_padding="--cut-padding" not in args).items()}
    for d, files in done.items():
        print(f"wrote {d}/{{{','.join(files)}}}")
    if not done:
        raise SystemExit(f"no retrieval samples.jsonl under {', '.join(roots)}")
    return list(done)


def lmeval(overrides: Sequence[str]) -> list[Path]:
    from toolsense.evaluation.benchmarks import load_benchmarks
    from toolsense.evaluation.runner import load_model_under_test
    from toolsense.interop.lmeval import scored_items, write_lmeval_model, write_lmeval_task

    scored_arg = [o.split("=", 1)[1] for o in overrides if o.startswith("--scored=")]
    cfg, out = _compose([o for o in overrides if not o.startswith("--scored=")], "outputs/lmeval")
    probes = {label: b for label, b in load_benchmarks(cfg.benchmark, cfg.benchmarks).items() if b.kind in ("mcq", "qa")}
    if not probes:
        raise SystemExit("no MCQ / QA benchmark in the configuration; name one with benchmark=demo_mcq or suite=<name>")
    default = Path(cfg.run) / "eval" / ("" if cfg.stage == "stage2" else cfg.stage) if cfg.run and cfg.checkpoint is None else None
    scored = None if scored_arg[-1:] == ["none"] else Path(scored_arg[-1]) if scored_arg else default
    ev = load_model_under_test(cfg)
    written = []
    for label, bench in probes.items():
        for mode in cfg.probe.modes:
            items = scored_items(scored / label / mode, bench) if scored is not None else None
            if items is None and scored_arg and scored is not None:
                raise SystemExit(f"--scored={scored}: no {scored / label / mode / 'samples.jsonl'} (an evaluation of "
                                 f"{label} in {mode} mode); --scored=none exports every item")
            written.append(write_lmeval_task(ev, bench, mode, cfg.probe, out, items=items))
            n = len(written[-1].with_suffix(".jsonl").read_text(encoding="utf-8").splitlines())
            which = f"those scored in {scored / label / mode}" if items is not None else "every item configured"
            print(f"wrote {written[-1]} ({n} of {len(bench.items)} items: {which})")
    model = write_lmeval_model(ev, out)
    print(f"wrote {model} (the model under test, with its virtual tokens)")
    print(f"run: lm_eval --model hf --model_args pretrained={model} --include_path {out} --tasks toolsense --apply_chat_template")
    return written


COMMANDS = {"beir": beir, "trec": trec, "lmeval": lmeval}


def main(argv: Sequence[str]) -> None:
    if not argv or argv[0] not in COMMANDS:
        raise SystemExit(f"usage:\n{USAGE}\n(commands: {', '.join(COMMANDS)})")
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
