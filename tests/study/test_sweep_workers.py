"""The study's worker pool (study/sweeps.py): sweeps of a group overlap at their ends (a worker with
no run left in one sweep starts the next), a capped sweep runs alone, a failure stops new sweeps.
Real processes stand in for ``train.py -m``: each "sweep" has one run, held by a lock file."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from toolsense.study import sweeps as sweeps_mod
from toolsense.study.config import StudyConfig
from toolsense.utils import workers as workers_mod

# One run per sweep: the first worker to create <root>/<name>.lock trains it (sleeps, logs start and
# end); a worker that finds it held skips it and exits 0, as train.py -m with TOOLSENSE_BUSY=skip does.
FAKE_SWEEP = textwrap.dedent("""
    import json, os, sys, time
    root, name, seconds, code = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    try:
        os.close(os.open(os.path.join(root, name + ".lock"), os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        sys.exit(0)
    def note(event):
        with open(os.path.join(root, "events.jsonl"), "a") as f:
            f.write(json.dumps({"sweep": name, "event": event, "t": time.time(), "busy": os.environ.get("TOOLSENSE_BUSY")}) + "\\n")
    note("start")
    time.sleep(seconds)
    note("end")
    sys.exit(code)
""")


def _job(root: Path, name: str, seconds: float, code: int = 0) -> tuple[str, list[str]]:
    return name, [sys.executable, "-c", FAKE_SWEEP, str(root), name, str(seconds), str(code)]


def _events(root: Path, alone: tuple[str, ...] = ()) -> dict[tuple[str, str], float]:
    rows = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]
    # shared runs: a held run is skipped, never waited for; a sweep run by one worker is not shared
    assert all(r["busy"] == (None if r["sweep"] in alone else "skip") for r in rows)
    return {(r["sweep"], r["event"]): r["t"] for r in rows}


def test_a_free_worker_starts_the_next_sweep_while_the_other_finishes(tmp_path):
    ends = []
    codes = workers_mod.run_workers([_job(tmp_path, "grid", 2.0), _job(tmp_path, "appendix_e", 0.2)], 2, tmp_path,
                                   poll_s=0.05, stagger_s=0.1, on_end=lambda name, code, n: ends.append((name, code, n)))
    assert codes == {"grid": 0, "appendix_e": 0}
    ev = _events(tmp_path)
    # worker 1 found grid's only run held, so it ran appendix_e before grid's run ended (the old pool waited)
    assert ev[("appendix_e", "start")] < ev[("appendix_e", "end")] < ev[("grid", "end")]
    # a sweep ends once every worker has passed it (grid as worker 0 leaves it), each run by both workers
    assert ends == [("grid", 0, 2), ("appendix_e", 0, 2)]
    assert (tmp_path / "grid.worker1.log").exists() and (tmp_path / "appendix_e.worker1.log").exists()


def test_after_a_failure_no_worker_starts_a_new_sweep(tmp_path):
    jobs = [_job(tmp_path, "grid", 0.3, code=3), _job(tmp_path, "appendix_e", 1.0), _job(tmp_path, "third", 0.1)]
    codes = workers_mod.run_workers(jobs, 2, tmp_path, poll_s=0.05, stagger_s=0.1)
    ev = _events(tmp_path)
    # worker 1 had moved on to appendix_e before grid failed: it finishes that run; no one starts "third"
    assert codes == {"grid": 3, "appendix_e": 0} and ("appendix_e", "end") in ev and ("third", "start") not in ev


def test_run_sweeps_overlaps_a_group_but_runs_a_capped_sweep_alone(tmp_path, monkeypatch):
    cfg = StudyConfig(root=str(tmp_path), workers=2, sweep_workers={"probe_model": 1},
                      sweeps={"grid": ["a"], "appendix_e": ["b"], "probe_model": ["c"], "retention": ["d"]})
    assert sweeps_mod.sweep_groups(cfg) == [["grid", "appendix_e"], ["probe_model"], ["retention"]]
    seconds = {"grid": 1.5, "appendix_e": 0.2, "probe_model": 0.2, "retention": 0.2}
    monkeypatch.setattr(sweeps_mod, "sweep_command", lambda cfg, name: _job(tmp_path, name, seconds[name])[1])
    real = sweeps_mod.run_workers
    monkeypatch.setattr(sweeps_mod, "run_workers", lambda *a, **kw: real(*a, **{**kw, "poll_s": 0.05, "stagger_s": 0.1}))
    rows = sweeps_mod.run_sweeps(cfg)
    ev = _events(tmp_path, alone=("probe_model",))
    assert ev[("appendix_e", "end")] < ev[("grid", "end")] <= ev[("probe_model", "start")]  # the capped sweep waits for the group
    assert ev[("probe_model", "end")] <= ev[("retention", "start")]
    assert {r["sweep"]: r["workers"] for r in rows} == {"grid": 2, "appendix_e": 2, "probe_model": 1, "retention": 2}
    timings = [json.loads(line) for line in (tmp_path / "timings.jsonl").read_text().splitlines()]
    assert sorted(r["sweep"] for r in timings if r.get("event") == "start") == sorted(seconds)  # every sweep's start is logged
    assert next(r for r in rows if r["sweep"] == "grid")["seconds"] >= 1.5


def test_a_failed_sweep_stops_the_study_naming_its_command(tmp_path, monkeypatch):
    cfg = StudyConfig(root=str(tmp_path), workers=1, sweeps={"grid": ["a"], "appendix_e": ["b"]})
    monkeypatch.setattr(sweeps_mod, "sweep_command", lambda cfg, name: _job(tmp_path, name, 0.1, code=2 if name == "grid" else 0)[1])
    real = sweeps_mod.run_workers
    monkeypatch.setattr(sweeps_mod, "run_workers", lambda *a, **kw: real(*a, **{**kw, "poll_s": 0.05}))
    with pytest.raises(RuntimeError, match="sweep grid failed \\(exit 2\\); rerun the study"):
        sweeps_mod.run_sweeps(cfg)
    assert ("appendix_e", "start") not in _events(tmp_path, alone=("grid",))


@pytest.mark.parametrize("beside, gpu", [(True, False), (False, True), (None, False), (None, True)])
def test_curve_points_run_beside_training_only_where_asked_or_on_a_gpu(tmp_path, monkeypatch, beside, gpu):
    """On CPU a curve point beside training took every core from it (the pilot's Stage-2 step 4.5 -> 65 s): points
    wait for the group's end (drain) unless curves_while_training says otherwise or training has a GPU."""
    calls: list[tuple[str, float]] = []

    class Points:
        def __init__(self, root, curves):
            assert curves == {"grid": ["stage=stage2"]}

        def __call__(self):
            calls.append(("poll", time.time()))

        def drain(self):
            calls.append(("drain", time.time()))

    cfg = StudyConfig(root=str(tmp_path), workers=1, sweeps={"grid": ["a"]}, curves={"grid": ["stage=stage2"]},
                      curves_while_training=beside)
    monkeypatch.setattr(sweeps_mod, "CurveEvaluations", Points)
    monkeypatch.setattr(sweeps_mod, "_gpu", lambda: gpu)
    monkeypatch.setattr(sweeps_mod, "sweep_command", lambda cfg, name: _job(tmp_path, name, 0.6)[1])
    real = sweeps_mod.run_workers
    monkeypatch.setattr(sweeps_mod, "run_workers", lambda *a, **kw: real(*a, **{**kw, "poll_s": 0.05}))
    sweeps_mod.run_sweeps(cfg)
    ev = _events(tmp_path, alone=("grid",))
    during = [t for what, t in calls if what == "poll" and ev[("grid", "start")] < t < ev[("grid", "end")]]
    assert bool(during) == (beside if beside is not None else gpu)
    assert [what for what, _ in calls][-1] == "drain" and calls[-1][1] >= ev[("grid", "end")]  # every point after the group
