"""First contact with a user's own OpenAI-compatible server (issue 35) and no key on disk (issue
38, item 3): the ``response_format`` negotiated per server (a refusal recognised whatever its
status, not retried, remembered), no key needed on loopback, a run that made nothing failing in
one line, and a key echoed by an endpoint scrubbed from every file a generation writes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.generation.scripted import FakeOpenAIServer, api_title
from toolsense.endpoints.client import EndpointStop
from toolsense.generation import prompts
from toolsense.generation.config import GenerateConfig
from toolsense.generation.llm import LLMConfig, ask_json, build_llm, unparsed_reason
from toolsense.generation.outputs import nothing_made
from toolsense.generation.runner import run
from toolsense.generation.structured import refuses_format, schema_error
from toolsense.utils.errors import ConfigError
from toolsense.utils.secrets import Scrubber, is_local_url

ROOT = Path(__file__).resolve().parents[2]


def _llm(server, key_env="NO_KEY_SET_HERE", **kw) -> LLMConfig:
    return LLMConfig(backend="openai", base_url=server.base_url, openai_model="scripted", api_key_env=key_env,
                     timeout_s=5.0, max_new_tokens=200, **kw)


def test_a_500_naming_json_schema_is_asked_once_per_server_then_json_object(server_factory, demo_catalog, nb, tmp_path,
                                                                            monkeypatch):
    """llama-cpp-python's server answers json_schema with a 500: before, that was retried as a
    transient error (max_retries times per call) and every item was left for a rerun."""
    monkeypatch.setenv("FAKE_KEY", "sk-fake-test-key")
    server = server_factory(refuse={"json_schema": 500})
    cfg = GenerateConfig(tasks=["qa"], n_probes=3, max_attempts=1, writer=_llm(server, "FAKE_KEY", max_retries=4),
                         output_dir=str(tmp_path / "gen"))
    summary = run(cfg, catalog=demo_catalog, embeddings=nb.emb)
    formats = [(r["body"].get("response_format") or {}).get("type") for r in server.requests]
    assert formats[0] == "json_schema" and server.requests[0]["status"] == 500
    assert formats.count("json_schema") == 1 and set(formats[1:]) == {"json_object"}  # not retried, not asked again
    assert summary["gen/qa/accepted"] == 3 and "gen/left_for_rerun" not in summary
    # remembered for the server, not the client: a new client (another run, a judge) starts at json_object
    n = len(server.requests)
    llm = build_llm(_llm(server, "FAKE_KEY"))
    obj, reply = ask_json(llm, prompts.qa_writer(demo_catalog[0], "Yes"), stage="qa_writer", schema=prompts.SCHEMAS["qa_writer"])
    assert [r["body"]["response_format"]["type"] for r in server.requests[n:]] == ["json_object"]
    assert reply.response_format == "json_object" and obj["answer"] == "Yes"


def test_plain_text_replies_are_checked_against_the_schema(server_factory, demo_catalog, monkeypatch):
    monkeypatch.delenv("NO_KEY_SET_HERE", raising=False)
    server = server_factory(refuse={"json_schema": 422, "json_object": 400})
    llm = build_llm(_llm(server))
    msgs = prompts.qa_writer(demo_catalog[0], "Yes")
    obj, reply = ask_json(llm, msgs, stage="qa_writer", schema=prompts.SCHEMAS["qa_writer"])
    assert obj is not None and reply.response_format == "text"
    assert "response_format" not in server.requests[-1]["body"] and len(server.requests) == 3
    # the scripted writer's QA reply checked against the MCQ schema: its keys do not fit
    obj, reply = ask_json(llm, msgs, stage="qa_writer", schema=prompts.SCHEMAS["mcq_writer"])
    assert obj is None and unparsed_reason(reply, "writer reply") == \
        "writer reply does not match the schema: reply: missing ['correct_answer', 'wrong_answers']"
    assert len(server.requests) == 4  # nothing renegotiated


def test_a_reply_is_read_by_json_s_grammar_wherever_it_starts():
    """Seen from llama-cpp-python's server under json_object: a bare newline inside a string (was
    "writer reply is not a JSON object"); a brace inside a string ended the object early."""
    from toolsense.generation.llm import parse_json_reply

    grammar_reply = '{ "question": "q", "wrong_answers": ["The answer is ", " the following:\n"]}'
    assert parse_json_reply(grammar_reply) == {"question": "q", "wrong_answers": ["The answer is ", " the following:\n"]}
    assert parse_json_reply('Sure: ```json\n{"query": "fill {name} in", "tools": [1]}\n``` done') == \
        {"query": "fill {name} in", "tools": [1]}
    assert parse_json_reply('{"query": "a } b", "tools": []}') == {"query": "a } b", "tools": []}
    assert parse_json_reply('{ broken {"a": {"b": 1}} tail') == {"a": {"b": 1}}
    assert parse_json_reply("no object [1, 2]") is None and parse_json_reply('{"a": 1') is None


def test_schema_error_pins_each_rule():
    s = prompts.SCHEMAS
    assert schema_error({"query": "q", "tools": [1, 2]}, s["rrb_writer"]) is None
    assert schema_error({"query": "q", "tools": [1, "2"]}, s["rrb_writer"]) == "reply.tools[1]: expected integer, got '2'"
    assert schema_error({"query": "q", "tools": [True]}, s["rrb_writer"]) == "reply.tools[0]: expected integer, got True"
    assert schema_error({"query": "q", "tools": [], "why": 1}, s["rrb_writer"]) == "reply: unexpected ['why']"
    assert schema_error({"answer": "Maybe"}, s["qa_judge"]) == "reply.answer: 'Maybe' is not one of ['Yes', 'No']"
    assert schema_error({"question": "q", "correct_answer": "a", "wrong_answers": ["b", "c"]}, s["mcq_writer"]) == \
        "reply.wrong_answers: 2 items, expected 3-3"
    verdict = {"naturalness": 6, "tier_compliance": 5, "label_correctness": 5, "satisfying": [1]}
    assert schema_error(verdict, s["rrb_judge"]) == "reply.naturalness: 6 is outside [1, 5]"


@pytest.mark.parametrize("status, body, refused", [
    (500, '{"error": {"message": "response_format type json_schema is not supported"}}', True),
    (400, "Invalid value for 'response_format.type': must be 'json_schema' or 'text'", True),
    (422, "json_object is not supported by this model", True),
    (500, '{"error": {"message": "internal error"}}', False),  # transient: retried
    (400, "This model's maximum context length is 8192 tokens", False),  # refused for good, format or not
    (None, "response_format", False),  # a connection error has no status
])
def test_a_format_refusal_is_recognised_by_its_body_whatever_the_status(status, body, refused):
    assert refuses_format(status, body) is refused


def test_a_local_server_needs_no_key_and_a_remote_one_names_the_variable(server_factory, monkeypatch, demo_catalog):
    monkeypatch.delenv("NO_KEY_SET_HERE", raising=False)
    server = server_factory()
    llm = build_llm(_llm(server))
    llm(prompts.qa_writer(demo_catalog[0], "Yes"))
    assert server.requests[-1]["auth"] == "Bearer no-key"
    with pytest.raises(ConfigError, match=r"llm.api_key_env='NO_KEY_SET_HERE': set that environment variable to the "
                                           r"API key of https://api\.example\.com/v1"):
        build_llm(LLMConfig(backend="openai", base_url="https://api.example.com/v1", api_key_env="NO_KEY_SET_HERE"))
    monkeypatch.setenv("NO_KEY_SET_HERE", "sk-a-real-key-for-local")
    assert build_llm(_llm(server)).client.api_key == "sk-a-real-key-for-local"  # a key that is set is always sent
    local = ["http://127.0.0.1:8080/v1", "http://127.9.9.9/v1", "http://localhost:11434/v1", "http://[::1]:1234/v1",
             "http://10.1.2.3:8000/v1", "http://192.168.0.7/v1", "http://172.20.0.2/v1", "http://gpu07:8000/v1", "http://vllm/v1"]
    remote = ["https://api.openai.com/v1", "http://8.8.8.8/v1", "https://my-vllm.example.org/v1", "http://172.32.0.1/v1", None]
    assert [is_local_url(u) for u in local] == [True] * len(local)
    assert [is_local_url(u) for u in remote] == [False] * len(remote)


def test_a_remote_endpoint_without_its_key_is_refused_naming_the_section(server_factory, demo_catalog, nb, tmp_path,
                                                                        monkeypatch):
    """The refusal names the field the user sets (writer.api_key_env, judge.api_key_env), before a request is sent."""
    monkeypatch.delenv("NO_KEY_SET_HERE", raising=False)
    remote = LLMConfig(backend="openai", base_url="https://api.example.com/v1", api_key_env="NO_KEY_SET_HERE")
    local = server_factory()
    for writer, judge, section in ((remote, None, "writer"), (_llm(local), remote, "judge")):
        cfg = GenerateConfig(tasks=["qa"], n_probes=1, writer=writer, judge=judge, output_dir=str(tmp_path / section))
        with pytest.raises(ConfigError, match=rf"^{section}\.api_key_env='NO_KEY_SET_HERE': set that environment variable"):
            run(cfg, catalog=demo_catalog, embeddings=nb.emb)
    assert local.requests == []


def test_nothing_made_says_why_in_one_line():
    assert nothing_made({"gen/qa/accepted": 1, "gen/qa/rejected": 9}) is None  # a partial run is not a failure
    left = nothing_made({"gen/left_for_rerun": 4, "rejection_reasons": {},
                         "gen/this_run/last_service_error": "APIConnectionError: Connection error."})
    assert left == ("made nothing: 4 items left for a rerun because the service stayed unavailable (APIConnectionError: "
                    "Connection error.), 0 rejected for good; fix the endpoint (writer.base_url) and rerun the same command to resume")
    rejected = nothing_made({"gen/qa/accepted": 0, "gen/qa/rejected": 3, "gen/rrb/easy/rejected": 2,
                             "rejection_reasons": {"writer reply is not a JSON object": 7, "duplicate query": 1}})
    assert rejected == ("made nothing: all 5 items were rejected for good (most often, 7x: writer reply is not a JSON object); "
                        "see rejected.jsonl")
    with pytest.raises(ValueError, match=r"nothing to generate: tasks=\['rrb'\] with rrb_per_tier=\{'easy': 0\} and n_probes=20"):
        GenerateConfig(tasks=["rrb"], rrb_per_tier={"easy": 0})


def test_a_dead_endpoint_leaves_everything_for_a_rerun_and_says_so(tmp_path, demo_catalog, nb, monkeypatch):
    monkeypatch.delenv("NO_KEY_SET_HERE", raising=False)
    dead = FakeOpenAIServer()
    dead.close()  # its port now refuses connections
    cfg = GenerateConfig(tasks=["qa"], n_probes=2, writer=_llm(dead, max_retries=0), output_dir=str(tmp_path))
    with pytest.raises(EndpointStop, match=r"could not be reached 4 times in a row .*\(writer.max_connection_failures=4\)"):
        run(cfg, catalog=demo_catalog, embeddings=nb.emb)  # the breaker: 4 connection failures in a row stop the run
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["gen/left_for_rerun"] == 2 and summary["gen/qa/accepted"] == 0
    assert summary["gen/this_run/stopped"].startswith(f"{dead.base_url}/ could not be reached")


SENTINEL = "tsk_SENTINEL_key_7f3a9c0e51"


def test_a_key_echoed_by_the_endpoint_never_reaches_disk(tmp_path, demo_catalog):
    """Every writer request is answered 400 with the key in the body (``Bearer <key>`` and the
    bare key): generate.py exits non-zero saying it made nothing, and no file it wrote — items,
    rejected.jsonl, summary.json, data_card.md, the reply cache, generate.log, the W&B run —
    holds the key, nor the other key-shaped string in the body."""
    server = FakeOpenAIServer(faults={api_title(t): "echo_key" for t in demo_catalog})
    out, logs, wandb_dir = tmp_path / "gen", tmp_path / "logs", tmp_path / "wandb"
    env = {**os.environ, "ECHO_TEST_KEY": SENTINEL, "WANDB_MODE": "offline", "WANDB_DIR": str(wandb_dir),
           "WANDB_SILENT": "true"}
    wandb_dir.mkdir()
    cli = [sys.executable, "generate.py", "tasks=[rrb]", "rrb_per_tier={easy:2,medium:0,hard:0}", "max_attempts=1", "writer.backend=openai",
           f"writer.base_url={server.base_url}", "writer.openai_model=scripted", "writer.api_key_env=ECHO_TEST_KEY",
           "writer.max_retries=0", "logger=wandb", f"output_dir={out}", f"hydra.run.dir={logs}"]
    try:
        proc = subprocess.run(cli, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        server.close()
    assert server.requests and all(r["auth"] == f"Bearer {SENTINEL}" for r in server.requests)
    written = [f for f in tmp_path.rglob("*") if f.is_file()]
    names = {f.name for f in written}
    assert {"rejected.jsonl", "summary.json", "data_card.md", "generate.log"} <= names and any(".wandb" in n for n in names)
    assert [str(f) for f in written if SENTINEL.encode() in f.read_bytes()] == []
    assert SENTINEL not in proc.stdout + proc.stderr
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "generate.py: made nothing: all 2 items were rejected for good (most often, 2x: API refused the request: "
        "HTTP 400: Error code: 400 - Incorrect API key provided: ***. Request headers: {'Authorization': 'Bearer ***'}); "
        "see rejected.jsonl")
    reasons = json.loads((out / "summary.json").read_text())["rejection_reasons"]
    assert list(reasons) == ["API refused the request: HTTP 400: Error code: 400 - Incorrect API key provided: ***. "
                             "Request headers: {'Authorization': 'Bearer ***'}"]


def test_scrubber_masks_values_keys_and_key_shapes():
    scrub = Scrubber.from_env(["MY_VAR"], environ={"MY_VAR": "plain-secret-value", "WANDB_API_KEY": "wandb0123456789",
                                                   "HOME": "/root", "SHORT_TOKEN": "abc"})
    row = {"reason": "bad key plain-secret-value", "plain-secret-value": ["Bearer abcdef1234567890", "sk-proj-ABCDEFGH12345678"],
           "n": 3, "t": ("wandb0123456789", "/root", "abc"), "hf": "token hf_abcdefghij0123456789"}
    assert scrub(row) == {"reason": "bad key ***", "***": ["Bearer ***", "***"], "n": 3, "t": ("***", "/root", "abc"),
                          "hf": "token ***"}
    prose = "Supports Bearer authentication (Bearer token) for task rrb-easy-00001 via sk-learn-compatible-models"
    assert scrub(prose) == prose  # tool descriptions and queries that only talk about keys are left alone


def test_scrubbed_logs_masks_every_record_while_the_block_runs(caplog):
    import logging

    from toolsense.utils.secrets import scrubbed_logs

    log = logging.getLogger("toolsense.generation.some_module")
    with caplog.at_level(logging.INFO), scrubbed_logs(Scrubber(["the-secret-value"])):
        log.info("refused: %s", "Authorization: Bearer the-secret-value")
        try:
            raise RuntimeError("echoed the-secret-value")
        except RuntimeError:
            log.exception("failed")
    log.warning("after: the-secret-value")
    assert [r.getMessage() for r in caplog.records[:2]] == ["refused: Authorization: Bearer ***", "failed"]
    assert "RuntimeError: echoed ***" in caplog.text and "the-secret-value" not in caplog.text.split("after:")[0]
    assert caplog.records[-1].getMessage() == "after: the-secret-value"  # the filter is gone after the block
