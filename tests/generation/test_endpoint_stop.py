"""An endpoint that cannot serve the job stops it at once with one line (unreachable: a circuit breaker over
connection failures; a refused key: which ``*.api_key_env`` and whether a key was sent); a 429 waits what its
Retry-After asks. Real HTTP on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from toolsense.endpoints.client import Breaker, EndpointStop, retry_after
from toolsense.generation.llm import LLMConfig, OpenAIChatLLM

ROOT = Path(__file__).resolve().parents[2]
COMPLETION = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hello"}}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


def _serve(replies: list[tuple[int, dict, dict]], models: list[str] | None = None):
    """A loopback server answering POSTs with ``replies`` in turn (status, headers, body), the last one repeated,
    and ``GET /v1/models`` with ``models`` (None: 404, a server that lists none)."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            status, body = (404, {"error": {"message": "no"}}) if models is None else \
                (200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "x"} for m in models]})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append({"auth": self.headers.get("Authorization", "")})
            status, headers, body = replies[min(len(seen), len(replies)) - 1]
            data = json.dumps(body).encode()
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", **headers}.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_a_429_waits_what_its_retry_after_asks(monkeypatch):
    httpd, url, seen = _serve([(429, {"Retry-After": "3"}, {"error": {"message": "slow down"}}), (200, {}, COMPLETION)])
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    try:
        llm = OpenAIChatLLM(LLMConfig(backend="openai", base_url=url, openai_model="m", api_key_env="NO_SUCH_KEY_VAR"), "writer")
        assert llm([{"role": "user", "content": "hi"}]) == "hello"
    finally:
        httpd.shutdown()
    assert waits == [3.0] and len(seen) == 2
    assert retry_after(None, 0.5) == 0.5 and retry_after(type("R", (), {"headers": {"retry-after-ms": "1500"}}), 0.5) == 1.5


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_names_its_setting_and_whether_a_key_was_sent(monkeypatch, status):
    httpd, url, seen = _serve([(status, {}, {"error": {"message": "invalid api key"}})])
    monkeypatch.delenv("JUDGE_KEY_VAR", raising=False)
    try:
        llm = OpenAIChatLLM(LLMConfig(backend="openai", base_url=url, openai_model="m", api_key_env="JUDGE_KEY_VAR"), "judge")
        with pytest.raises(EndpointStop) as e:
            llm([{"role": "user", "content": "hi"}])
        assert f"{url}/ refused the request (HTTP {status}" in str(e.value) and "no key was sent ($JUDGE_KEY_VAR is unset)" in str(e.value)
        assert str(e.value).startswith("judge.api_key_env='JUDGE_KEY_VAR'") and "\n" not in str(e.value) and len(seen) == 1  # not retried
        monkeypatch.setenv("JUDGE_KEY_VAR", "sk-secret-value-1234")
        llm = OpenAIChatLLM(LLMConfig(backend="openai", base_url=url, openai_model="m", api_key_env="JUDGE_KEY_VAR"), "judge")
        with pytest.raises(EndpointStop, match=r"the key in \$JUDGE_KEY_VAR was sent") as e:
            llm([{"role": "user", "content": "hi"}])
        assert "sk-secret" not in str(e.value) and seen[-1]["auth"] == "Bearer sk-secret-value-1234"
    finally:
        httpd.shutdown()


def test_the_breaker_opens_after_its_limit_and_an_answer_resets_it():
    b = Breaker(3, "http://x/v1")
    b.failed("refused")
    b.answered()
    b.failed("refused")
    b.failed("refused")
    with pytest.raises(EndpointStop, match=r"http://x/v1 could not be reached 3 times in a row \(last: refused\)"):
        b.failed("refused")
    with pytest.raises(EndpointStop):  # open: every later request stops at once
        b.check()


def test_a_closed_port_stops_the_run_in_seconds_and_leaves_every_item_for_a_rerun(tmp_path, demo_catalog, nb):
    """Issue 46: 28 items had each waited out 6 retries (625 s). Now 4 failed connections in a row (0.5 + 1 + 2 s
    of back-off) stop the run; the error says why, and, as nothing was made, nothing is written (issue 49: the
    folder it made, its lock and generation_config.json, are removed, so the same command later starts afresh)."""
    from toolsense.generation.config import GenerateConfig
    from toolsense.generation.runner import run

    llm = LLMConfig(backend="openai", base_url=f"http://127.0.0.1:{_closed_port()}/v1", openai_model="m", api_key_env="NO_SUCH_KEY_VAR")
    cfg = GenerateConfig(rrb_per_tier={"easy": 7, "medium": 3, "hard": 2}, n_probes=4, writer=llm, output_dir=str(tmp_path / "gen"))
    t0 = time.perf_counter()
    with pytest.raises(EndpointStop, match=r"could not be reached 4 times in a row .* left for a rerun"):
        run(cfg, catalog=demo_catalog, embeddings=nb.emb)
    assert time.perf_counter() - t0 < 20
    assert list(tmp_path.iterdir()) == []


def test_generate_py_against_a_closed_port_exits_2_with_one_line(tmp_path):
    out = tmp_path / "gen"
    args = [sys.executable, "generate.py", "writer.backend=openai", f"writer.base_url=http://127.0.0.1:{_closed_port()}/v1",
            "writer.openai_model=m", "writer.api_key_env=NO_SUCH_KEY_VAR", "rrb_per_tier={easy:7,medium:3,hard:2}",
            "n_probes=4", f"output_dir={out}", f"hydra.run.dir={tmp_path / 'logs'}"]
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600)
    print(f"generate.py against a closed port: exit {proc.returncode} after {time.perf_counter() - t0:.0f} s")
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("generate.py: error: http://127.0.0.1:") and "could not be reached 4 times in a row" in last
    assert "Traceback" not in proc.stderr


def test_the_model_name_is_checked_against_what_the_server_lists():
    """llama.cpp answers any model name with its one model: a name the server does not list is refused naming the
    field and what it serves; a listed one is the served id (the data card records it); a server that lists none
    is not checked."""
    from toolsense.utils.errors import EndpointError

    httpd, url, _ = _serve([(200, {}, COMPLETION)], models=["smollm2-135m.gguf"])
    try:
        with pytest.raises(EndpointError, match=r"writer.openai_model='gpt-4o-mini': .* does not serve that model \(GET /models "
                                                r"lists 'smollm2-135m.gguf'\); set writer.openai_model to one of them"):
            OpenAIChatLLM(LLMConfig(backend="openai", base_url=url, api_key_env="NO_SUCH_KEY_VAR"), "writer")
        cfg = LLMConfig(backend="openai", base_url=url, openai_model="smollm2-135m.gguf", api_key_env="NO_SUCH_KEY_VAR")
        ok = OpenAIChatLLM(cfg, "writer")
        assert ok.served == "smollm2-135m.gguf"
    finally:
        httpd.shutdown()
    httpd, url, _ = _serve([(200, {}, COMPLETION)])
    try:
        cfg = LLMConfig(backend="openai", base_url=url, openai_model="any", api_key_env="NO_SUCH_KEY_VAR")
        assert OpenAIChatLLM(cfg, "writer").served is None
    finally:
        httpd.shutdown()
