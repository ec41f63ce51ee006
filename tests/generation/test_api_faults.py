"""The generator against a real OpenAI-compatible HTTP server on loopback that misbehaves the
way hosted APIs do: every planned item ends accepted or counted, never lost or duplicated, and
a killed run resumes without paying for a cached call twice."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.generation.scripted import api_title
from toolsense.generation.config import GenerateConfig
from toolsense.generation.llm import LLMConfig
from toolsense.generation.rrb import plan_rrb
from toolsense.generation.runner import run
from toolsense.utils.io import sha256_text

ROOT = Path(__file__).resolve().parents[2]
PER_TIER = {"easy": 7, "medium": 3, "hard": 2}


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake-test-key")


def _cfg(server, out, **kw) -> GenerateConfig:
    llm = LLMConfig(backend="openai", base_url=server.base_url, openai_model="scripted", api_key_env="FAKE_OPENAI_KEY",
                    max_retries=2, timeout_s=1.0, max_new_tokens=200)
    return GenerateConfig(rrb_per_tier=PER_TIER, n_probes=4, max_attempts=2, writer=llm, output_dir=None if out is None else str(out),
                          prices={"scripted": {"input": 1.0, "output": 2.0}}, **kw)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_injected_api_failures_are_counted_and_nothing_is_lost(tmp_path, server_factory, demo_catalog, nb):
    easy = [t for t in plan_rrb(demo_catalog, nb, PER_TIER, 13, 0)[0] if t.tier == "easy"]
    titles = [api_title(demo_catalog[t.anchor]) for t in easy]
    faults = dict(zip(titles, ["malformed", "http500_once", "http400", "timeout_once", "truncated"]))
    faults[titles[6]] = "copy:" + titles[5]
    server = server_factory(faults=faults, judge_garbled=True, sleep_s=1.6)
    out = tmp_path / "gen"
    summary = run(_cfg(server, out), catalog=demo_catalog, embeddings=nb.emb)

    rejected = _rows(out / "rejected.jsonl")
    by_task = {t.task_id: [r["reason"] for r in rejected if r["task_id"] == t.task_id] for t in easy}
    fault_of = dict(zip(["malformed", "http500_once", "http400", "timeout_once", "truncated"], easy))
    assert by_task[fault_of["malformed"].task_id] == ["writer reply is not a JSON object"] * 2
    assert by_task[fault_of["http400"].task_id] == ["API refused the request: HTTP 400: Error code: 400 - "
                                                   "This model's maximum context length is 8192 tokens"] * 2
    assert by_task[fault_of["truncated"].task_id] == ["writer reply truncated at max_new_tokens"] * 2
    assert summary["usage"]["by_stage"]["rrb_writer"]["truncated"] >= 2
    assert by_task[easy[6].task_id] == ["duplicate query"] * 2  # it repeats the query accepted for easy[5]
    rrb = _rows(out / "rrb.jsonl")
    accepted = {r["generation"]["task_id"] for r in rrb}
    # a 500 and a time-out are retried by the client and the item is made
    assert {fault_of["http500_once"].task_id, fault_of["timeout_once"].task_id} <= accepted
    assert sorted(server.seen.values())[-1] >= 2
    # the garbled judge is asked again on its own: the writer is not re-asked for those items
    judge_calls = [r for r in server.requests if r["body"]["messages"][-1]["content"].startswith("Request:")]
    assert {r["body"]["temperature"] for r in judge_calls} == {0, 0.5}
    # every planned item is accepted or finally rejected: nothing lost, nothing twice
    final = {r["task_id"] for r in _rows(out / "rejected.jsonl") if r["final"]}
    planned = sum(PER_TIER.values())
    assert len(accepted) == len(rrb) and len(accepted) + len({t for t in final if t.startswith("rrb")}) == planned
    for kind in ("mcq", "qa"):
        assert summary[f"gen/{kind}/accepted"] + summary.get(f"gen/{kind}/rejected", 0) == 4
    # structured output was asked for, and usage / cost add up from the API's usage fields
    assert all("response_format" in r["body"] for r in server.requests)
    stage = summary["usage"]["by_stage"]["rrb_writer"]
    assert stage["prompt_tokens"] > 0 and summary["usage"]["estimated_cost_usd"] > 0
    assert "| rrb_writer |" in (out / "data_card.md").read_text()
    # a rerun sends nothing and counts the same (the summary is cumulative, from the files)
    n = len(server.requests)
    again = run(_cfg(server, out), catalog=demo_catalog, embeddings=nb.emb)
    assert len(server.requests) == n
    assert {k: v for k, v in again.items() if "/accepted" in k or "/rejected" in k} == \
        {k: v for k, v in summary.items() if "/accepted" in k or "/rejected" in k}


def test_endpoint_without_json_schema_falls_back_to_plain_json(tmp_path, server_factory, demo_catalog, nb):
    server = server_factory(no_schema=True)
    summary = run(_cfg(server, tmp_path / "gen"), catalog=demo_catalog, embeddings=nb.emb)
    with_schema = [r for r in server.requests if "response_format" in r["body"]]
    # json_schema, then json_object, each asked once and refused; plain text from then on
    assert [(r["body"]["response_format"]["type"], r["status"]) for r in with_schema] == [("json_schema", 400), ("json_object", 400)]
    assert sum(v for k, v in summary.items() if k.endswith("/accepted")) > 10


def test_resume_into_a_directory_of_another_config_names_the_fields(tmp_path, server_factory, demo_catalog, nb):
    server = server_factory()
    cfg = _cfg(server, tmp_path / "gen", tasks=["qa"])
    run(cfg, catalog=demo_catalog, embeddings=nb.emb)
    other = _cfg(server, tmp_path / "gen", tasks=["qa"])
    other.n_probes, other.concurrency = 5, 2  # concurrency only changes speed: not part of the identity
    with pytest.raises(ValueError, match=r"differing fields: config\.n_probes: 4 -> 5\. Use another output_dir"):
        run(other, catalog=demo_catalog, embeddings=nb.emb)
    # the default directory is derived from (catalog, config): the same command lands in the same place
    a = _cfg(server, None, tasks=["qa"], output_root=str(tmp_path / "root"))
    b = _cfg(server, None, tasks=["qa"], output_root=str(tmp_path / "root"), concurrency=3)
    first = run(a, catalog=demo_catalog, embeddings=nb.emb)["output_dir"]
    n = len(server.requests)
    assert run(b, catalog=demo_catalog, embeddings=nb.emb)["output_dir"] == first
    assert first.startswith(str(tmp_path / "root")) and len(server.requests) == n  # resumed: nothing sent again


def _cache_key(req: dict) -> str:
    b = req["body"]
    name = f"openai:{b['model']}@{BASE[0]}"
    return sha256_text(json.dumps([name, b["max_tokens"], b["messages"], b["temperature"], b["seed"],
                                   "response_format" in b], sort_keys=True))


BASE: list[str] = []


def test_kill_9_then_torn_lines_then_rerun_loses_and_repeats_nothing(tmp_path, server_factory, demo_catalog, nb):
    server = server_factory(delay_s=0.15)
    BASE[:] = [server.base_url]
    ref = run(_cfg(server, tmp_path / "ref"), catalog=demo_catalog, embeddings=nb.emb)
    server.requests.clear()
    out = tmp_path / "killed"
    args = [sys.executable, "generate.py", "writer.backend=openai", f"writer.base_url={server.base_url}",
            "writer.openai_model=scripted", "writer.api_key_env=FAKE_OPENAI_KEY", "writer.max_retries=2",
            "writer.timeout_s=1.0", "writer.max_new_tokens=200", "rrb_per_tier={easy:7,medium:3,hard:2}", "n_probes=4",
            "max_attempts=2", "+prices.scripted={input:1.0,output:2.0}", f"output_dir={out}",
            f"hydra.run.dir={tmp_path / 'logs'}"]
    proc = subprocess.Popen(args, cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and len(_rows(out / "rrb.jsonl")) < 4 and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for f in out.glob("*.jsonl"):  # tear the last line of every file, as a kill mid-write would
        data = f.read_bytes()
        if data:
            f.write_bytes(data[: len(data) - max(2, len(data.rstrip(b"\n").split(b"\n")[-1]) // 2)])
    cached = {json.loads(line)["key"] for line in (out / "llm_cache.jsonl").read_text().splitlines()[:-1]}
    sent_before = len(server.requests)
    resumed = run(_cfg(server, out), catalog=demo_catalog, embeddings=nb.emb)
    assert not {_cache_key(r) for r in server.requests[sent_before:]} & cached  # no cached request sent again
    for name in ("rrb.jsonl", "mcq.jsonl", "qa.jsonl"):  # nothing lost, nothing twice: equal to an uninterrupted run
        got, want = _rows(out / name), _rows(tmp_path / "ref" / name)
        assert sorted(json.dumps(r, sort_keys=True) for r in got) == sorted(json.dumps(r, sort_keys=True) for r in want)
    assert {k: v for k, v in resumed.items() if k.endswith(("/accepted", "/rejected"))} == \
        {k: v for k, v in ref.items() if k.endswith(("/accepted", "/rejected"))}
