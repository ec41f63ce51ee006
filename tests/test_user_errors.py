"""A refused command, as a user types it (issue 49, issue 45 item 6): one line naming the field and
the fix, exit 2, nothing written, no traceback unless ``debug=true`` (or ``HYDRA_FULL_ERROR=1``);
a bug keeps its traceback and exit 1.

The jobs run in this process (their ``main()`` with ``sys.argv`` set), from an empty working
directory, so "nothing written" covers Hydra's own log folder too."""

from __future__ import annotations

import importlib
import sys

import pytest

from toolsense.utils.errors import ConfigError, UserError
from toolsense.utils.hydra import DEBUG_ENV

TRACES = "traces.jsonl"  # never read: the refusal comes first


def _run(monkeypatch, tmp_path, job: str, *args: str) -> int:
    """``<job>.py *args`` from an empty folder; its exit status."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [f"{job}.py", *args])
    module = importlib.import_module(f"toolsense.jobs.{job}")
    with pytest.raises(SystemExit) as done:
        module.main()
    return done.value.code


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch):
    for var in (DEBUG_ENV, "HYDRA_FULL_ERROR"):  # set (to off) so that monkeypatch restores it after: debug=true sets it
        monkeypatch.setenv(var, "")


# (job, overrides, the one line after "<job>.py: error: ")
REFUSED = [
    ("evaluate", ["model=tiny_random", "metrics.ks=[1.5]"], "metrics.ks[0]=1.5: must be a whole number"),
    ("evaluate", ["model=tiny_random", "metrics.seed=-5"], "metrics.seed=-5: must be >= 0 (a random seed: numpy takes 0 to 2**32 - 1)"),
    ("evaluate", ["model=tiny_random", "metrics.resamples=100.5"], "metrics.resamples=100.5: must be a whole number"),
    ("evaluate", ["model=tiny_random", "decoding.beam_width=10.5"], "decoding.beam_width=10.5: must be a whole number"),
    ("evaluate", ["model=tiny_random", "metrics.min_hits=nan"], "metrics.min_hits=nan: must be a whole number"),
    ("evaluate", ["model=tiny_random", "metrics.min_hits=inf"], "metrics.min_hits=inf: must be a whole number"),
    ("evaluate", ["model=tiny_random", "metrics.min_hits=2.5"], "metrics.min_hits=2.5: must be a whole number"),
    ("generate", ["writer.timeout_s=inf"], "writer.timeout_s=inf: must be a finite number"),
    ("generate", ["judge=openai", "judge.timeout_s=inf"], "judge.timeout_s=inf: must be a finite number"),
    ("generate", ["seed=-5"], "seed=-5: must be >= 0 (a random seed: numpy takes 0 to 2**32 - 1)"),
    ("audit", [f"data.path={TRACES}", "stats.seed=-5"], "stats.seed=-5: must be >= 0 (a random seed: numpy takes 0 to 2**32 - 1)"),
    ("audit", [f"data.path={TRACES}", "pt2d.features=[]"], "pt2d.features=[]: must not be empty"),
    ("audit", [f"data.path={TRACES}", "scorer.unparseable_score=2"],
     "scorer.unparseable_score=2: must be <= 1 (a score on the 0-1 scale the parsers map answers to)"),
    ("audit", [f"data.path={TRACES}", "scorer.unparseable_score=nan"],
     "scorer.unparseable_score=nan: must be a finite number (a score on the 0-1 scale the parsers map answers to)"),
]


@pytest.mark.parametrize("job, overrides, line", REFUSED, ids=[" ".join(o[-1:]) + f" ({j})" for j, o, _ in REFUSED])
def test_a_refused_value_is_one_line_exit_2_and_nothing_written(monkeypatch, tmp_path, capfd, job, overrides, line):
    out = tmp_path / "out"
    code = _run(monkeypatch, tmp_path, job, *overrides, f"output_dir={out}")
    err = capfd.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [f"{job}.py: error: {line}"]
    assert list(tmp_path.iterdir()) == []  # no output folder, no Hydra log folder


def test_debug_true_shows_the_traceback(monkeypatch, tmp_path, capfd):
    import os

    code = _run(monkeypatch, tmp_path, "evaluate", "model=tiny_random", "metrics.seed=-5", "debug=true")
    err = capfd.readouterr().err
    assert code == 1 and "Traceback" in err and "ConfigError: metrics.seed=-5: must be >= 0" in err
    assert os.environ[DEBUG_ENV] == "1"  # for the processes the job starts; the fixture restores it after


def test_hydra_full_error_lets_the_error_through(monkeypatch, tmp_path):
    """Hydra re-raises it (Python prints the whole traceback and exits 1)."""
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["evaluate.py", "model=tiny_random", "metrics.seed=-5"])
    with pytest.raises(ConfigError, match=r"^metrics.seed=-5: must be >= 0"):
        importlib.import_module("toolsense.jobs.evaluate").main()


def test_a_bug_keeps_its_traceback_and_exit_1(monkeypatch, tmp_path, capfd):
    import toolsense.jobs.compare as job

    def broken(cfg, output_dir):
        raise KeyError("a bug, not the user's")

    monkeypatch.setattr(job, "run", broken)
    code = _run(monkeypatch, tmp_path, "compare", f"roots=[{tmp_path}]", f"output_dir={tmp_path / 'out'}")
    err = capfd.readouterr().err
    assert code == 1 and "Traceback" in err and "KeyError" in err and "error:" not in err.splitlines()[0]


def test_the_error_types_are_one_family():
    from toolsense.evaluation.fingerprint import FingerprintMismatch
    from toolsense.utils.errors import DataError, EndpointError, MissingFile
    from toolsense.utils.io import DataError as IoDataError

    assert IoDataError is DataError
    for cls in (ConfigError, DataError, EndpointError, MissingFile, FingerprintMismatch):
        assert issubclass(cls, UserError) and issubclass(cls, ValueError)
    assert issubclass(MissingFile, FileNotFoundError)


def test_a_repeated_query_id_is_refused_naming_it_and_both_lines_before_the_model_loads(monkeypatch, tmp_path, capfd):
    """Issue 49: it was refused after the model had loaded, naming neither the id nor a line."""
    import shutil

    import toolsense.evaluation.runner as runner

    src = runner.Path(__file__).parent / "assets" / "evaluation"
    data = tmp_path.parent / f"{tmp_path.name}_data"
    data.mkdir()
    shutil.copy(src / "tools.jsonl", data / "tools.jsonl")
    lines = (src / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    (data / "queries.jsonl").write_text("\n".join([*lines, lines[0].replace("Paris", "Rome")]) + "\n", encoding="utf-8")
    monkeypatch.setattr(runner, "load_model_under_test", lambda cfg: pytest.fail("the model loaded first"))
    code = _run(monkeypatch, tmp_path, "evaluate", "model=tiny_random", f"catalog.path={data / 'tools.jsonl'}",
                "benchmark=generated", f"benchmark.path={data / 'queries.jsonl'}", f"output_dir={tmp_path / 'out'}")
    assert code == 2
    assert capfd.readouterr().err.strip().splitlines() == [
        f"evaluate.py: error: {data / 'queries.jsonl'}:{len(lines) + 1}: repeated id 'q0' (first at {data / 'queries.jsonl'}:1); "
        "samples.jsonl is keyed by id, so it would be scored twice: give each item its own id"]
    assert list(tmp_path.iterdir()) == []


def test_a_key_the_endpoint_refuses_is_one_line_naming_the_section_field(monkeypatch, tmp_path, capfd):
    """Issue 49: a 401 printed 52 lines that ended naming ``llm.api_key_env``, which is no config field."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refuse(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            data = json.dumps({"error": {"message": "Invalid API key", "type": "invalid_request_error"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv("REFUSED_TEST_KEY", "tsk_refused_0123456789abcdef")
    try:
        code = _run(monkeypatch, tmp_path, "generate", "tasks=[rrb]", "rrb_per_tier={easy:1,medium:0,hard:0}",
                    "writer.backend=openai", f"writer.base_url={url}", "writer.openai_model=m", "writer.max_retries=0",
                    "writer.api_key_env=REFUSED_TEST_KEY", f"output_dir={tmp_path / 'out'}")
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    lines = [x for x in err.strip().splitlines() if "error:" in x]
    assert code == 2 and "Traceback" not in err and "tsk_refused" not in err
    assert lines == [f"generate.py: error: writer.api_key_env='REFUSED_TEST_KEY': {url}/ refused the request (HTTP 401: Error code: "
                     "401 - Invalid API key); the key in $REFUSED_TEST_KEY was sent. Set $REFUSED_TEST_KEY to a key "
                     "this endpoint accepts, or point writer.base_url at another"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == []  # refused before any item: nothing written


def test_a_dangling_symlinked_output_dir_is_one_line(monkeypatch, tmp_path, capfd):
    """Issue 49: it was a raw ``FileExistsError``."""
    link = tmp_path.parent / f"{tmp_path.name}_link"
    link.symlink_to(tmp_path.parent / f"{tmp_path.name}_gone")
    try:
        code = _run(monkeypatch, tmp_path, "evaluate", "parametric=false", "baseline=bm25", "benchmark.limit=2",
                    f"output_dir={link / 'eval'}")
    finally:
        link.unlink()
    assert code == 2
    assert capfd.readouterr().err.strip().splitlines() == [
        f"evaluate.py: error: {link}: a symlink to {tmp_path.parent / f'{tmp_path.name}_gone'}, which does not exist; "
        "create that folder, or point output_dir elsewhere"]
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_names_the_file_it_was_writing(tmp_path, monkeypatch):
    """Issue 49: ``OSError: [Errno 28] No space left on device`` named no path (write() gives none)."""
    import errno

    from toolsense.utils.errors import environment_error
    from toolsense.utils.jsonl import JsonlStore
    from toolsense.utils.paths import atomic_write_text

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "results.json"
    monkeypatch.setattr(type(target), "write_text", full)
    with pytest.raises(OSError) as e:
        atomic_write_text(target, "{}")
    assert e.value.filename == str(target) and environment_error(e.value) == (
        f"{target}: No space left on device while writing it; free space there, or point output_dir at another disk")
    monkeypatch.undo()
    store = JsonlStore(tmp_path / "samples.jsonl")
    monkeypatch.setattr("builtins.open", lambda *a, **k: full())
    with pytest.raises(OSError, match=rf"No space left on device: '{tmp_path / 'samples.jsonl'}'"):
        store.append({"id": 1})


# Hydra's composition errors (issue 49): one line naming the override and the fix, exit 2; before any model loads.
# (job, override, what the one line after "<job>.py: error: " starts with); model=tiny_random trainer.seed=-5 are a
# safety net: were the override accepted, the seed is refused before anything trains.
COMPOSITION = [
    ("train", "trainer.lrr=1", "trainer.lrr: no such field; trainer has effective_batch, per_device_batch, "),
    ("train", "model.name_or_pth=x", "model.name_or_pth: no such field; did you mean model.name_or_path?"),
    ("train", "experiment=tg_3f", "experiment=tg_3f: experiment has no option 'tg_3f'; did you mean experiment=tg_3fm"),
    ("train", "model=tiny_randm", "model=tiny_randm: model has no option 'tiny_randm'; did you mean model=tiny_random? "
                                  "choose from "),
    ("train", "trainer.seed=[1", "trainer.seed=[1: Hydra cannot parse this override (no viable alternative at input '[1'); "
                                 "quote a value"),
    ("evaluate", "metrics.kss=[1]", "metrics.kss: no such field; did you mean metrics.ks?"),
    ("evaluate", "benchmark=nope", "benchmark=nope: benchmark has no option 'nope'; choose from demo_mcq, "),
    ("evaluate", "metrics.ks=[1", "metrics.ks=[1: Hydra cannot parse this override"),
]


@pytest.mark.parametrize("job, override, start", COMPOSITION, ids=[f"{o} ({j})" for j, o, _ in COMPOSITION])
def test_a_command_line_hydra_cannot_compose_is_one_line_exit_2(tmp_path, job, override, start):
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), DEBUG_ENV: "", "HYDRA_FULL_ERROR": ""}
    args = [sys.executable, str(root / f"{job}.py"), "model=tiny_random", "trainer.seed=-5" if job == "train" else "metrics.seed=-5",
            override]
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(f"{job}.py: error: {start}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("job, override", [("train", "experiment=nope"), ("evaluate", "benchmark=nope")])
def test_cfg_job_refuses_an_option_that_exists_nowhere(tmp_path, job, override):
    """``--cfg job`` shows a config without running the job: ``experiment=nope`` (an optional group, which Hydra skips
    silently) printed the default config, exit 0, as if the option existed."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), DEBUG_ENV: "", "HYDRA_FULL_ERROR": ""}
    run = [sys.executable, str(root / f"{job}.py"), "--cfg", "job", "model=tiny_random"]
    proc = subprocess.run([*run, override], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    group, _, option = override.partition("=")
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
    assert proc.stderr.strip() == proc.stderr.strip().splitlines()[0]
    assert proc.stderr.startswith(f"{job}.py: error: {override}: {group} has no option '{option}'; choose from ")
    ok = subprocess.run([*run, f"{group}={'tg' if job == 'train' else 'demo_mcq'}"], cwd=tmp_path, env=env,
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.startswith("model:"), ok.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


def test_debug_true_or_hydra_full_error_keeps_a_composition_error_s_traceback(monkeypatch, tmp_path, capfd):
    from hydra.errors import ConfigCompositionException

    code = _run(monkeypatch, tmp_path, "train", "trainer.lrr=1", "debug=true")
    err = capfd.readouterr().err
    assert code == 1 and "Traceback" in err and "ConfigCompositionException: Could not override 'trainer.lrr'" in err
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    monkeypatch.setenv(DEBUG_ENV, "")
    monkeypatch.setattr(sys, "argv", ["train.py", "trainer.lrr=1"])
    with pytest.raises(ConfigCompositionException, match="Could not override 'trainer.lrr'"):
        importlib.import_module("toolsense.jobs.train").main()


def test_a_key_into_a_list_field_is_one_line_exit_2(tmp_path):
    """compare.py's ``metrics`` is a list: ``metrics.kss=[1]`` made OmegaConf raise a bare ValueError (not wrapped by
    Hydra as a composition error), a traceback and exit 1."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), DEBUG_ENV: "", "HYDRA_FULL_ERROR": ""}
    proc = subprocess.run([sys.executable, str(root / "compare.py"), f"roots=[{tmp_path}]", "metrics.kss=[1]",
                           f"output_dir={tmp_path / 'out'}"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("compare.py: error: an override does not fit the config (") and "metrics=[...]" in lines[0]
    assert not (tmp_path / "out").exists()
