"""The reproduction study: the paper's configurations trained, evaluated and compared in one
command, then the report that sets each of the paper's findings beside ours.

    python reproduce.py                     # study=cpu: the CPU-scale study (make reproduce)
    python reproduce.py train=false         # rebuild the report from the results already under root

A study is a list of train.py ``-m`` sweeps (``sweeps``: name -> overrides) that share ``common``
overrides (model size, steps, the evaluation suite). Each sweep runs as its own train.py process
into ``<root>/<name>`` — a fixed directory, so rerunning the command resumes every sweep where it
stopped (finished stages are skipped, evaluations resume from their samples) — and ends with the
sweep's comparison table and plots (CompareAfterSweep). With ``workers=N`` each sweep runs as N
train.py processes that share its runs (a run directory is held by one process at a time; the
others skip it, TOOLSENSE_BUSY=skip), so N cores train N runs at once. The report (report.py) is then built
from the ``results.json`` / ``drift.json`` files alone. Wall time per sweep is appended to
``<root>/timings.jsonl`` as each sweep ends. A study's ``inputs`` (files not in our data) are checked
before anything is written, and with ``archive`` set the finished runs a fresh machine lacks are
restored from it before training (archive.py), then the archive is repacked as runs finish.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolsense.conduct.archive import CODE_DIR, archive_results, restore_archive, unpack_archive
from toolsense.plan.registration import changed_rules, register
from toolsense.reporting.html_report import write_html_report
from toolsense.study.config import StudyConfig, check_input
from toolsense.study.report import write_report
from toolsense.study.sweeps import run_sweeps
from toolsense.utils.errors import ConfigError
from toolsense.utils.io import keep_code_diff


def run_study(cfg: StudyConfig) -> dict[str, Any]:
    """Entry point of ``reproduce.py``: the sweeps (unless ``train=false``), then the report."""
    if cfg.train and cfg.closed:
        raise ConfigError(f"study={cfg.name} is closed: {cfg.closed} (rebuild its report with train=false)")
    if cfg.train:
        for name, inp in cfg.inputs.items():  # before anything is written or submitted
            check_input(name, inp)
        restore_archive(cfg)
        keep_code(cfg)
        reg = register(cfg)
        late = changed_rules(reg)
        print(f"analysis plan {reg['sha256'][:12]} registered at commit {str(reg['commit'])[:12]} ({reg['at']}); "
              f"{len(late)} change(s) after results existed")
        if late:  # kept beside the first registration, never over it; the report shows both verdicts
            print(f"WARNING: the analysis plan changed after {late[-1]['finished_runs_before']} run(s) had finished "
                  f"({', '.join(late[-1]['moved'])}): the report flags each finding it moves")
        if cfg.archive:
            archive_results(cfg.root, cfg.archive)  # the registration is in the archive before any result
        run_sweeps(cfg)
    unpacked = not cfg.train and unpack_archive(cfg)
    summary = write_report(cfg)
    print(f"wrote {cfg.report} ({len(summary['findings'])} findings) from the results under {cfg.root}")
    page = write_html_report(cfg.root, Path(cfg.root) / "report.html", title="toolsense study: every evaluation")
    if page is not None:
        print(f"wrote {page} (every evaluation of the study: tables, plots, a per-sample browser)")
    if cfg.archive and not unpacked:
        n = archive_results(cfg.root, cfg.archive)
        print(f"wrote {cfg.archive} ({n} files the report is built from)")
    return summary


def keep_code(cfg: StudyConfig) -> str | None:
    """Before any run starts, the diff of uncommitted code kept as ``<root>/.code/<sha256>.diff`` (utils/io.py
    ``keep_code_diff``; packed into the archive with the registration), so every run's done.json
    (``code.diff_sha256``) names a diff that travels with the results; a study that cannot keep it refuses to
    start. Returns the diff's hash, or None where the code is as committed."""
    try:
        kept = keep_code_diff(Path(cfg.root) / CODE_DIR)
    except OSError as e:
        raise RuntimeError(f"study={cfg.name}: the code has uncommitted changes and their diff cannot be kept under "
                           f"root={cfg.root} ({e}); commit them, or give a writable root") from e
    if kept:
        print(f"the code differs from commit {kept[0][:12]}: its diff ({kept[1][:12]}) is kept in {kept[2]}; "
              "every run's done.json names it")
    return kept[1] if kept else None
