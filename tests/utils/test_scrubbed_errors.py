"""The error a job dies of holds no secret: an endpoint that echoes the key in its error body
(evaluate.py's baseline=openai here: one line, exit 2; audit.py's scorer=openai and generate.py share the wrapper)
fails with the key masked on the console, in Hydra's job log and in every file the run wrote."""

import http.server
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from toolsense.utils.secrets import Scrubber, scrubbed_errors, scrubbed_job

ROOT = Path(__file__).resolve().parents[2]
SENTINEL = "sk-echoed-secret-0123456789abcdef"


def test_an_error_holding_a_secret_is_replaced_by_its_scrubbed_text(caplog, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_KEY", "plain-secret-value")
    with pytest.raises(RuntimeError) as info, caplog.at_level(logging.ERROR):
        with scrubbed_job(["MY_SERVICE_KEY"]):
            try:
                raise KeyError("lookup of plain-secret-value")
            except KeyError as e:  # the secret sits in a chained cause, the outer message is clean
                raise ValueError(f"endpoint said: Bearer {SENTINEL}") from e
    assert str(info.value) == "ValueError: endpoint said: Bearer ***"
    assert info.value.__cause__ is None and info.value.__suppress_context__
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "KeyError" in logged and "lookup of ***" in logged and "plain-secret-value" not in logged
    assert SENTINEL not in logged


def test_an_error_without_a_secret_is_raised_unchanged():
    err = ValueError("metrics.ks[0]=1.5: a whole number")
    with pytest.raises(ValueError) as info:
        with scrubbed_errors(Scrubber(["plain-secret-value"])):
            raise err
    assert info.value is err


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers every request 400, echoing the Authorization header and the bare key."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {auth.split()[-1]}. "
                                                f"Request headers: {{'Authorization': '{auth}'}}", "type": "invalid_request_error"}})
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *a):
        pass


def test_evaluate_with_an_echoing_embeddings_endpoint_writes_and_prints_no_key(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "OPENAI_API_KEY": SENTINEL, "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1",
           "HF_HUB_OFFLINE": "1", "TOOLSENSE_CACHE": str(tmp_path / "cache")}
    out, logs = tmp_path / "eval", tmp_path / "logs"
    cli = [sys.executable, "evaluate.py", "model=tiny_random", "benchmark=demo_realistic", "benchmark.limit=3",
           "baseline=openai", f"output_dir={out}", f"hydra.run.dir={logs}"]
    try:
        proc = subprocess.run(cli, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        server.shutdown()
    assert proc.returncode == 2  # one line: the endpoint refused the request (its echo of the key masked)
    last = proc.stderr.strip().splitlines()[-1]
    assert "refused a request for" in last and "(HTTP 400: " in last and "Bearer ***" in last, proc.stderr[-2000:]
    assert SENTINEL not in proc.stdout + proc.stderr
    written = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert any(f.name == "samples.fingerprint.json" for f in written)  # the run wrote files (a user error logs no evaluate.log)
    assert [str(f) for f in written if SENTINEL.encode() in f.read_bytes()] == []
