"""``python -m toolsense.export``: toolsense's data and results in the formats other tools read.

    python -m toolsense.export beir catalog=toolbench benchmark=toolbench_g1 output_dir=outputs/beir
    python -m toolsense.export beir suite=demo                  # every retrieval benchmark of a suite
    python -m toolsense.export trec outputs/demo/eval           # run files + qrels of existing results

``beir`` composes ``conf/evaluate.yaml`` with the overrides given (the same ``catalog=`` /
``benchmark=`` / ``suite=`` groups and dotted keys as evaluate.py) and writes, per retrieval
benchmark, ``<output_dir>/<benchmark>/{corpus.jsonl, queries.jsonl, qrels/test.tsv}``
(evaluation/export.py: write_beir). ``trec`` writes ``run.constrained.trec``, ``run.free.trec``
and ``qrels.trec`` beside every retrieval ``samples.jsonl`` under the folders given
(evaluation/export.py: export_tree); evaluations made now write them themselves.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

USAGE = __doc__.split("\n\n")[1]


def beir(overrides: Sequence[str]) -> dict[str, dict[str, int]]:
    from hydra import compose, initialize_config_dir

    from toolsense.catalog.config import load_from_config
    from toolsense.evaluation.benchmarks import load_benchmark
    from toolsense.evaluation.config import EvaluateConfig, register_configs
    from toolsense.evaluation.export import write_beir
    from toolsense.evaluation.runner import CONF_DIR
    from toolsense.utils.config import to_config

    register_configs()
    ovr = [o for o in overrides if not o.startswith("output_dir=")]
    out = Path(next((o.split("=", 1)[1] for o in overrides if o.startswith("output_dir=")), "outputs/beir"))
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = to_config(EvaluateConfig, compose("evaluate", overrides=ovr))
    catalog = load_from_config(cfg.catalog)
    where = "benchmarks.{}" if cfg.benchmarks else "benchmark"
    written = {}
    for label, bc in cfg.benchmark_sections().items():
        bench = load_benchmark(bc, where.format(label))
        if bench.kind != "retrieval":
            print(f"{label}: a {bench.kind} probe, not a retrieval benchmark; BEIR has no layout for it (skipped)")
            continue
        written[label] = write_beir(catalog, bench.items, out / label)
        c = written[label]
        print(f"wrote {out / label}: {c['corpus']} tools, {c['queries']} queries, {c['qrels']} qrels")
    if not written:
        raise SystemExit("no retrieval benchmark in the configuration; name one with benchmark=<name> or suite=<name>")
    return written


def trec(roots: Sequence[str]) -> list[Path]:
    from toolsense.evaluation.export import export_tree

    if not roots:
        raise SystemExit("trec: name the results folders to export, e.g. python -m toolsense.export trec outputs/demo/eval")
    done = [d for root in roots for d in export_tree(root)]
    for d in done:
        print(f"wrote {d}/{{run.constrained.trec,run.free.trec,qrels.trec}}")
    if not done:
        raise SystemExit(f"no retrieval samples.jsonl under {', '.join(roots)}")
    return done


COMMANDS = {"beir": beir, "trec": trec}


def main(argv: Sequence[str]) -> None:
    if not argv or argv[0] not in COMMANDS:
        raise SystemExit(f"usage:\n{USAGE}\n(commands: {', '.join(COMMANDS)})")
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
