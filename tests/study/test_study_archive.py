"""A study archives as it goes and resumes on a fresh machine (conduct/archive.py): finished runs only, no machine
paths, repacked when a run finishes, restored before training without overwriting; a tiny study run in part,
its outputs deleted, rerun -> the finished run restored and skipped, not retrained (slow)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from toolsense.conduct.archive import ArchiveProgress, archive_results, restore_archive
from toolsense.study.config import StudyConfig
from toolsense.study.sweeps import evaluation_finished, mark_evaluation_finished

ROOT = Path(__file__).resolve().parents[2]


def _run(root: Path, name: str, done: bool, combined: bool = False) -> Path:
    run = root / "grid" / name
    (run / "eval" / "standard" / "model").mkdir(parents=True)
    (run / "stage2").mkdir()
    (run / "config.yaml").write_text(f"output_dir: {ROOT}/outputs/x/{name}\n"
                                     f"catalog:\n  path: {Path.home()}/.cache/toolsense/catalogs/c.jsonl\n")
    (run / "stage2" / "model.safetensors").write_bytes(b"weights")
    (run / "eval" / "standard" / "model" / "results.json").write_text(json.dumps({"run": str(run)}))
    if done:
        (run / "done.json").write_text('{"config_sha256": "abc"}')
    if combined:
        (run / "eval" / "results.json").write_text("{}")
    return run


def test_archive_holds_finished_runs_only_and_no_machine_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(Path.home() / ".cache" / "toolsense"))
    root = tmp_path / "study"
    _run(root, "0_tg-lora", done=True)
    _run(root, "1_tg_h-lora", done=False)  # in progress: left out whole
    _run(root, "2_old-lora", done=False, combined=True)  # finished before done.json existed: its combined results count
    (root / "timings.jsonl").write_text('{"sweep": "grid", "seconds": 1}\n')
    n = archive_results(root, tmp_path / "a.tar.xz")
    with tarfile.open(tmp_path / "a.tar.xz") as tar:
        names = sorted(tar.getnames())
        cfg = tar.extractfile("study/grid/0_tg-lora/config.yaml").read().decode()
    assert n == len(names) == 7 and "study/timings.jsonl" in names
    assert not [x for x in names if "1_tg_h-lora" in x or x.endswith(".safetensors")]
    assert "study/grid/2_old-lora/eval/results.json" in names
    assert cfg == "output_dir: outputs/x/0_tg-lora\ncatalog:\n  path: $TOOLSENSE_CACHE/catalogs/c.jsonl\n"


def test_two_packers_at_once_leave_a_whole_archive(tmp_path):
    """Two study processes on one root (a sweep run with ``only=`` beside the main one) pack at the same
    moment: each writes a temporary file of its own and renames it into place, so the archive is always
    one whole pack (one shared temporary name gave a corrupt .tar.xz, seen 2026-12-02), and none is left."""
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path / "study"
    for i in range(6):
        run = _run(root, f"{i}_tg-lora", done=True)
        (run / "eval" / "standard" / "model" / "samples.jsonl").write_text(os.urandom(200_000).hex())
    with ThreadPoolExecutor(2) as pool:
        counts = list(pool.map(lambda _: archive_results(root, tmp_path / "a.tar.xz"), range(4)))
    with tarfile.open(tmp_path / "a.tar.xz") as tar:
        assert len([m for m in tar.getmembers() if tar.extractfile(m).read() is not None]) == counts[0] == 6 * 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tar.xz", "study"]  # no temporary file left behind


def test_progress_repacks_when_a_run_finishes(tmp_path):
    root = tmp_path / "study"
    run = _run(root, "0_tg-lora", done=False)
    progress = ArchiveProgress(root, tmp_path / "a.tar.xz", every_s=0.0)
    progress()
    assert not (tmp_path / "a.tar.xz").exists()  # nothing finished yet: a committed archive is not replaced by nothing
    (run / "done.json").write_text("{}")
    progress()
    assert "study/grid/0_tg-lora/done.json" in tarfile.open(tmp_path / "a.tar.xz").getnames()
    mtime = (tmp_path / "a.tar.xz").stat().st_mtime_ns
    progress()
    assert (tmp_path / "a.tar.xz").stat().st_mtime_ns == mtime  # no run finished since: not repacked


def test_restore_brings_back_finished_runs_without_overwriting(tmp_path):
    src = tmp_path / "old" / "study"
    _run(src, "0_tg-lora", done=True)
    _run(src, "1_tg_h-lora", done=True)
    (src / "timings.jsonl").write_text('{"sweep": "grid", "seconds": 1}\n')
    archive_results(src, tmp_path / "a.tar.xz")
    root = tmp_path / "fresh" / "study"
    here = _run(root, "1_tg_h-lora", done=True)  # finished on this machine too: kept as it is
    (here / "eval" / "standard" / "model" / "results.json").write_text('{"mine": true}')
    cfg = StudyConfig(root=str(root), archive=str(tmp_path / "a.tar.xz"))
    assert restore_archive(cfg) == 1
    assert (root / "grid" / "0_tg-lora" / "done.json").is_file() and (root / "timings.jsonl").is_file()
    assert json.loads((here / "eval" / "standard" / "model" / "results.json").read_text()) == {"mine": True}
    assert restore_archive(cfg) == 0  # everything is here now
    assert restore_archive(StudyConfig(root=str(root), archive=str(tmp_path / "none.tar.xz"))) == 0


def test_an_untrained_evaluation_is_skipped_only_under_the_same_overrides(tmp_path):
    cmd = [sys.executable, "-m", "toolsense.jobs.evaluate", "model=x", "benchmarks.mcq.limit=120",
           f"output_dir={tmp_path / 'e'}"]
    assert not evaluation_finished(tmp_path / "e", cmd)
    mark_evaluation_finished(tmp_path / "e", cmd)
    assert evaluation_finished(tmp_path / "e", cmd)
    assert evaluation_finished(tmp_path / "e", [*cmd[:-1], "output_dir=/elsewhere"])  # where it was written does not count
    assert not evaluation_finished(tmp_path / "e", [*cmd[:4], "benchmarks.mcq.limit=230", cmd[-1]])
    # the identity is the overrides alone, as when the job was the script evaluate.py: archived done.json still match
    done = json.loads((tmp_path / "e" / "done.json").read_text())
    overrides = json.dumps(["model=x", "benchmarks.mcq.limit=120"]).encode()
    assert done["overrides_sha256"] == hashlib.sha256(overrides).hexdigest()


def _reproduce(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, str(ROOT / "reproduce.py"), "study=mini", f"root={tmp_path / 'outputs' / 'study'}",
           f"report={tmp_path / 'r.md'}", f"plots_dir={tmp_path / 'img'}", f"archive={tmp_path / 'results.tar.xz'}",
           "only=[grid]", "extra=['experiment=tg']", *extra]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.slow
def test_a_tiny_study_resumes_on_a_fresh_machine_from_its_archive(tmp_path):
    """Run part of the study (one grid run of study=mini), delete outputs/ as a fresh machine would, rerun: the
    finished run is restored from the archive and skipped by its done.json (no model folder is written), and the
    report is rebuilt with the same findings."""
    import shutil

    _reproduce(tmp_path)
    run = tmp_path / "outputs" / "study" / "grid" / "0_tg-lora"
    assert (run / "stage2").is_dir() and "study/grid/0_tg-lora/done.json" in tarfile.open(tmp_path / "results.tar.xz").getnames()
    first = (tmp_path / "r.md").read_text()
    shutil.rmtree(tmp_path / "outputs")
    again = _reproduce(tmp_path)
    out = again.stdout + again.stderr
    assert "restored 1 finished runs" in out and "trained and evaluated earlier under this config (done.json); skipped" in out
    assert not (run / "stage1").exists() and not (run / "stage2").exists()
    rows = lambda text: [line for line in text.splitlines() if line[:4] in {f"| {n} " for n in range(1, 8)}]  # noqa: E731
    assert rows((tmp_path / "r.md").read_text()) == rows(first)


def test_the_archive_is_found_from_the_configs_location_in_any_folder(tmp_path, monkeypatch):
    """From a checkout, a study's archive (a path relative to the checkout) is found beside the configs
    whatever the working folder: train=false in an empty folder unpacks the shipped results there."""
    from toolsense.conduct.archive import unpack_archive
    from toolsense.utils.compose import checkout_path

    monkeypatch.chdir(tmp_path)
    shipped = "docs/reports/reproduction_results.tar.xz"
    assert checkout_path(shipped) == ROOT / shipped and checkout_path(shipped).is_file()
    cfg = StudyConfig(name="cpu", root="outputs/reproduce", train=False, archive=shipped)
    assert unpack_archive(cfg) and (tmp_path / "outputs" / "reproduce" / "grid" / "0_tg-lora" / "done.json").is_file()


def test_without_a_checkout_the_missing_archive_is_refused_naming_where_it_looked(tmp_path, monkeypatch):
    """An installed wheel (no checkout around its configs) in an empty folder: the archive is looked for under
    the working folder, and its absence is refused naming that path and how to get the archive."""
    import toolsense.conduct.archive as archive_mod

    conf = tmp_path / "site-packages" / "toolsense" / "conf"
    conf.mkdir(parents=True)
    monkeypatch.setattr("toolsense.utils.compose.conf_dir", lambda: conf)
    monkeypatch.chdir(tmp_path)
    cfg = StudyConfig(name="cpu", root="outputs/reproduce", train=False, archive="docs/reports/reproduction_results.tar.xz")
    with pytest.raises(FileNotFoundError, match=rf"study=cpu: outputs/reproduce holds no results and its archive is not at "
                                                 rf"{tmp_path}/docs/reports/reproduction_results.tar.xz .*ships with the "
                                                 r"repository, not with the installed package.*archive=<its path>"):
        archive_mod.unpack_archive(cfg)
    assert archive_mod.restore_archive(StudyConfig(name="cpu", root="outputs/reproduce", archive=cfg.archive)) == 0  # a new study


def test_a_report_rebuilt_on_a_fresh_machine_rebuilds_the_catalog_and_checks_it_against_the_runs(tmp_path, monkeypatch,
                                                                                                  shared_data):
    """reproduce.py train=false from an unpacked archive: the study catalog and its standard split (not archived) are
    rebuilt as train.py builds them, and compared with the tools the first run indexed; where nothing is missing, or
    nothing can be built, nothing is done."""
    from toolsense.catalog import load_catalog
    from toolsense.data.verbose import default_output
    from toolsense.reporting.catalog_section import catalog_section
    from toolsense.study.inputs import rebuild_inputs
    from toolsense.study.sweep import Sweep

    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    cfg = {"catalog": {"path": "$TOOLSENSE_CACHE/catalogs/study_tools_tb.jsonl", "build": "study_tools_tb",
                       "data_dir": str(shared_data), "auto_build": True}}
    run = tmp_path / "root" / "grid" / "0_tg-lora"
    run.mkdir(parents=True)
    (run / "index.json").write_text(json.dumps({"tools": [{"name": "not a tool of it"}]}))
    sweep = Sweep("grid", run.parent, 5, 50)
    assert catalog_section(cfg).startswith("The catalog's composition is not recorded")  # the fresh machine
    note = rebuild_inputs(cfg, sweep)
    catalog = tmp_path / "cache" / "catalogs" / "study_tools_tb.jsonl"
    assert note.startswith("Rebuilt on this machine for this report") and "1,200 tools, **not** the tools the runs" in note
    assert "`$TOOLSENSE_CACHE/catalogs/study_tools_tb.jsonl`" in note and str(tmp_path) not in note  # no machine path
    assert catalog.is_file() and default_output(catalog).is_file()
    assert catalog_section(cfg).startswith("1,200 tools: ")  # the section now reads the rebuilt catalog
    assert rebuild_inputs(cfg, sweep) is None  # nothing missing: nothing done
    default_output(catalog).unlink()
    (run / "index.json").write_text(json.dumps({"tools": [{"name": t.name} for t in load_catalog(catalog)]}))
    assert rebuild_inputs(cfg, sweep).endswith("1,200 tools, the same tools the runs indexed.")
    nodata = {"catalog": {**cfg["catalog"], "path": "$TOOLSENSE_CACHE/catalogs/other.jsonl", "data_dir": str(tmp_path / "no")}}
    assert rebuild_inputs(nodata, sweep) is None and rebuild_inputs({"catalog": {**cfg["catalog"], "auto_build": False,
                                                                                 "path": "$TOOLSENSE_CACHE/x.jsonl"}}, sweep) is None


def test_a_shipped_report_rebuilds_from_its_archive_on_an_empty_cache(tmp_path, shared_data):
    """The user's command on a fresh clone: `reproduce.py study=tools train=false` with an empty TOOLSENSE_CACHE. Finding
    7's coverage rebuilds the runs' Stage-2 queries from the study catalog, which the archive does not hold: it failed
    ('build the catalog first') until the report rebuilt its inputs before reading them."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOOLSENSE_CACHE": str(tmp_path / "cache"),
           "TOOLSENSE_DATA": str(shared_data)}
    cmd = [sys.executable, str(ROOT / "reproduce.py"), "study=tools", "train=false",
           f"root={tmp_path / 'outputs' / 'reproduce_tools'}", f"report={tmp_path / 'r.md'}", f"plots_dir={tmp_path / 'img'}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "Rebuilt on this machine for this report (the archive holds no catalog): `$TOOLSENSE_CACHE/catalogs/study_tools.jsonl`" in report
    note = next(line for line in report.splitlines() if line.startswith("Rebuilt on this machine"))
    assert "the same tools the runs indexed" in note and str(tmp_path) not in note, note
    assert sum(line.startswith(f"| {n} | ") for line in report.splitlines() for n in range(1, 8)) >= 7  # every finding judged
