"""``baseline=openai`` against an OpenAI-compatible embedding server (issue 46), real HTTP on loopback: the base URL
and model from the config, batched requests, a server's per-token replies mean-pooled (or a malformed reply refused
in one line), every batch cached so that a run stopped half-way resumes with only the missing batches, and a dead
endpoint one line with exit 2. The real llama.cpp server: test_llama_cpp_embeddings.py."""

from __future__ import annotations

import importlib
import json
import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from toolsense.baselines.config import BaselineConfig
from toolsense.baselines.rankers import build_baseline
from toolsense.catalog import load_catalog, load_query_jsonl
from toolsense.endpoints.client import EndpointStop
from toolsense.utils.errors import EndpointError

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "training"
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _word(w: str) -> list[float]:
    """A token's vector: its letter counts, its length last (so a text's mean is not its letters' sum scaled)."""
    return [w.count(c) + 0.01 for c in LETTERS] + [float(len(w))]


class EmbeddingServer:
    """``/v1/embeddings`` on loopback. ``pooling``: ``mean`` answers each text's mean token vector (a token: a
    lower-cased word), ``none`` the token vectors themselves (llama.cpp without pooling), ``short`` one vector too few.
    ``fail_after``: requests answered before every later one gets a 500. Records each request's texts, model and key."""

    def __init__(self, pooling: str = "mean", models: list[str] | None = None, fail_after: int | None = None):
        self.pooling, self.models, self.fail_after = pooling, models, fail_after
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _reply(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if outer.models is None:
                    return self._reply(404, {"error": {"message": "not found"}})
                self._reply(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "x"}
                                                             for m in outer.models]})

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"input": req["input"], "model": req["model"], "auth": self.headers.get("Authorization")})
                if outer.fail_after is not None and len(outer.requests) > outer.fail_after:
                    return self._reply(500, {"error": {"message": "the server fell over"}})
                vecs = [[_word(w) for w in t.lower().split()] for t in req["input"]]
                if outer.pooling != "none":
                    vecs = [np.mean(v, axis=0).tolist() for v in vecs]
                if outer.pooling == "short":
                    vecs = vecs[:-1]
                self._reply(200, {"object": "list", "model": req["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1},
                                  "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vecs)]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return tmp_path / "cache" / "embeddings"


@pytest.fixture
def serve():
    servers: list[EmbeddingServer] = []

    def start(*a, **kw) -> EmbeddingServer:
        servers.append(EmbeddingServer(*a, **kw))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _cfg(url: str, **kw) -> BaselineConfig:
    return BaselineConfig(**{"kind": "openai", "base_url": url, "encoder": "m", "api_key_env": "NO_SUCH_KEY_VAR", "batch_size": 8,
                             "encode_batch_size": 4, **kw})


def _rank(url: str, **kw) -> list[list[tuple[str, float]]]:
    cat, queries = load_catalog(ASSETS / "tools.jsonl"), load_query_jsonl(ASSETS / "queries.jsonl")
    ranker = build_baseline(cat, _cfg(url, **kw), 5)
    return [[(x["tool"], x["score"]) for x in r.constrained] for r in ranker.run(queries)]


def test_requests_are_batched_to_the_configured_model_and_every_batch_is_cached(cache, serve):
    server = serve()
    first = _rank(server.url)
    sizes = [len(r["input"]) for r in server.requests]
    # the 9 tools in batches of 4, then 16 queries: 2 ranker batches of 8, each sent 4 texts a request
    assert sizes == [4, 4, 1, 4, 4, 4, 4]
    assert {r["model"] for r in server.requests} == {"m"} and {r["auth"] for r in server.requests} == {"Bearer no-key"}
    cat, queries = load_catalog(ASSETS / "tools.jsonl"), load_query_jsonl(ASSETS / "queries.jsonl")
    unit = lambda t: (v := np.mean([_word(w) for w in t.lower().split()], axis=0)) / np.linalg.norm(v)  # noqa: E731
    cos = np.array([unit(t.text()) for t in cat]) @ unit(queries[0].text)
    assert first[0] == [(cat.names[i], round(float(cos[i]), 5)) for i in np.argsort(-cos, kind="stable")[:5]]
    assert len(list((cache / "requests").glob("*.npy"))) == 4  # the query batches; the catalog's is its cache entry
    server.requests.clear()
    assert _rank(server.url) == first and server.requests == []  # a rerun sends nothing


def test_per_token_replies_are_mean_pooled_as_a_server_pooling_by_mean_would(cache, serve, caplog):
    pooled_here, pooled_there = serve("none"), serve("mean")
    with caplog.at_level(logging.WARNING, logger="toolsense.models.encoders.remote"):
        here = _rank(pooled_here.url)
    there = _rank(pooled_there.url)
    assert here == there  # the same vectors: the same rankings and scores
    # asked one text a request once it answered per token (llama-cpp-python's token vectors are right for the first only)
    assert [len(r["input"]) for r in pooled_here.requests] == [4] + [1] * (9 - 1 + 16)
    warned = [r.getMessage() for r in caplog.records if "one vector per token" in r.getMessage()]
    assert len(warned) == 1 and pooled_here.url in warned[0]  # said once, naming the server


def test_a_reply_that_is_not_one_vector_per_text_is_refused_in_one_line(cache, serve):
    server = serve("short")
    with pytest.raises(EndpointStop) as e:
        _rank(server.url)
    assert str(e.value) == f"{server.url}/ answered 3 embeddings for 4 texts; baseline=openai needs one per text"


@pytest.mark.parametrize("fail_after, left", [(2, 5), (5, 2)])
def test_a_run_stopped_half_way_resumes_with_the_missing_batches_only(cache, serve, monkeypatch, tmp_path, fail_after, left):
    """Stopped inside the catalog (2 of its 3 batches done: its entry's checkpoints) or inside the queries (the catalog
    and 2 of the 4 query batches done): the rerun sends only the batches not embedded before, and ranks as a run that
    was never stopped."""
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "reference"))
    whole = _rank(serve().url)
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    server = serve(fail_after=fail_after)
    with pytest.raises(EndpointStop, match=r"refused a request for \d embeddings \(HTTP 500: .*the server fell over.*\); "
                                           r"the batches embedded before it are cached for a rerun"):
        _rank(server.url, max_retries=0)
    done = [tuple(r["input"]) for r in server.requests[:fail_after]]
    server.fail_after = None
    server.requests.clear()
    resumed = _rank(server.url)
    again = [tuple(r["input"]) for r in server.requests]
    assert len(again) == left and not set(again) & set(done)  # only the batches not embedded before
    assert [[t for t, _ in row] for row in resumed] == [[t for t, _ in row] for row in whole]
    assert np.allclose([[s for _, s in row] for row in resumed], [[s for _, s in row] for row in whole], atol=1e-5)


def test_a_model_the_server_does_not_list_is_refused_before_any_request(cache, serve):
    server = serve(models=["smollm2"])
    with pytest.raises(EndpointError, match=r"^baseline.encoder='m': .* does not serve that model \(GET /models lists "
                                            r"'smollm2'\); set baseline.encoder to one of them$"):
        _rank(server.url)
    assert server.requests == []


def test_the_key_goes_to_the_server_but_never_into_the_cache(cache, serve, monkeypatch):
    server = serve()
    monkeypatch.setenv("EMBED_TEST_KEY", "sk-embed-secret-0123456789")
    _rank(server.url, api_key_env="EMBED_TEST_KEY")
    assert {r["auth"] for r in server.requests} == {"Bearer sk-embed-secret-0123456789"}
    assert not any(b"sk-embed-secret" in p.read_bytes() for p in cache.rglob("*") if p.is_file())


def test_endpoint_settings_are_for_kind_openai_and_the_url_is_part_of_the_fingerprint():
    with pytest.raises(ValueError, match="baseline.base_url and baseline.api_key_env apply to kind=openai only"):
        BaselineConfig(kind="dense", base_url="http://127.0.0.1:1/v1")
    assert BaselineConfig(kind="openai").identity() == {"kind": "openai", "encoder": None}  # folders from before still resume
    assert BaselineConfig(kind="openai", base_url="http://h:1/v1").identity()["base_url"] == "http://h:1/v1"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_evaluate_py_against_a_dead_endpoint_exits_2_in_one_line(cache, tmp_path, monkeypatch, capfd):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["evaluate.py", "parametric=false", "baseline=openai", f"baseline.base_url={url}",
                                      "baseline.encoder=m", f"catalog.path={ASSETS / 'tools.jsonl'}", "benchmark=generated",
                                      f"benchmark.path={ASSETS / 'queries.jsonl'}", f"output_dir={tmp_path / 'out'}"])
    t0 = time.perf_counter()
    with pytest.raises(SystemExit) as done:
        importlib.import_module("toolsense.jobs.evaluate").main()
    assert done.value.code == 2 and time.perf_counter() - t0 < 30
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"evaluate.py: error: {url}/ could not be reached 4 times in a row (last: Connection error.); stopped, the remaining "
        "items are left for a rerun (baseline.max_connection_failures=4)")
