"""One writer per output folder, nothing counted twice, bad values refused before work starts
(issue 21): two real generate.py processes into one folder, a rerun after a kill between an
item's attempts or through its torn ``final`` row, cumulative counters, and a corrected command
after a failed start."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.generation.scripted import FakeOpenAIServer, api_title
from toolsense.generation.config import GenerateConfig
from toolsense.generation.llm import LLMConfig
from toolsense.generation.rrb import plan_rrb
from toolsense.generation.runner import run
from toolsense.utils.config import to_config
from toolsense.utils.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
KEY = {"FAKE_OPENAI_KEY": "sk-fake-test-key"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _counts(summary: dict) -> dict:
    """Everything a rerun must count exactly as an uninterrupted run did."""
    keep = {k: v for k, v in summary.items() if k.endswith(("/accepted", "/rejected")) or k == "gen/llm_calls"}
    return {**keep, "rejection_reasons": summary["rejection_reasons"], "usage": summary["usage"]}


# ---------------------------------------------------------------- two processes, one folder
def _cli(server, out, tmp_path) -> list[str]:
    return [sys.executable, "generate.py", "tasks=[rrb]", "rrb_per_tier={easy:2,medium:1,hard:0}", "max_attempts=2",
            "writer.backend=openai", f"writer.base_url={server.base_url}", "writer.openai_model=scripted",
            "writer.api_key_env=FAKE_OPENAI_KEY", "writer.timeout_s=300", "writer.max_new_tokens=200",
            f"output_dir={out}", f"hydra.run.dir={tmp_path / 'logs'}"]


def test_two_generate_processes_into_one_folder_refused_skipped_or_waiting(tmp_path):
    gate = threading.Event()
    server = FakeOpenAIServer(gate=gate)  # holds every reply until the gate opens: the first process stays busy
    out, procs = tmp_path / "gen", []

    def start(busy=None):
        env = {k: v for k, v in os.environ.items() if k != "TOOLSENSE_BUSY"}
        env.update(KEY, **({"TOOLSENSE_BUSY": busy} if busy else {}))
        procs.append(subprocess.Popen(_cli(server, out, tmp_path), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
        return procs[-1]

    try:
        first = start()
        deadline = time.time() + 300
        while server.waiting < 1 and first.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        assert server.waiting == 1, first.stderr.read()[-2000:] if first.poll() is not None else "no request in time"
        refused, skipped, waiter = start(), start("skip"), start("wait")
        err = refused.communicate(timeout=300)[1]
        assert refused.returncode != 0
        assert f"{out}: another process is generating into this folder (pid {first.pid} on " in err
        assert "TOOLSENSE_BUSY=wait" in err
        stdout = skipped.communicate(timeout=300)[0]
        assert skipped.returncode == 0 and f"skipped {out}: busy (pid {first.pid} on " in stdout
        assert waiter.poll() is None and server.waiting == 1  # the waiter sent nothing: it waits for the lock
        gate.set()
        assert first.wait(timeout=300) == 0, first.stderr.read()[-2000:]
        sent_by_first = len(server.requests)
        waited = "".join(waiter.communicate(timeout=300))
        assert waiter.returncode == 0, waited[-2000:]
        assert f"{out}: waiting for pid {first.pid} on " in waited  # issue 38: the wait said nothing
        assert len(server.requests) == sent_by_first  # it ran after the first one: everything was done, nothing sent
    finally:
        gate.set()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        server.close()
    rrb, rejected = _rows(out / "rrb.jsonl"), _rows(out / "rejected.jsonl")
    tasks = [r["generation"]["task_id"] for r in rrb]
    assert len(tasks) == len(set(tasks)) and len(tasks) + len({r["task_id"] for r in rejected if r["final"]}) == 3
    keys = [(r["task_id"], r["attempt"]) for r in rejected]
    assert len(keys) == len(set(keys))  # nothing written twice
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gen/llm_calls"] == len(_rows(out / "llm_cache.jsonl")) == sent_by_first
    assert sum(v for k, v in summary.items() if k.endswith(("/accepted", "/rejected"))) == 3


def test_busy_policy_value_is_checked(monkeypatch, tmp_path, demo_catalog):
    monkeypatch.setenv("TOOLSENSE_BUSY", "later")
    with pytest.raises(ValueError, match=r"TOOLSENSE_BUSY='later': choose from \['fail', 'skip', 'wait'\]"):
        run(GenerateConfig(output_dir=str(tmp_path / "gen")), catalog=demo_catalog)
    assert not (tmp_path / "gen").exists()


# ---------------------------------------------------------------- counted once
def test_rerun_after_a_kill_between_attempts_or_a_torn_final_row_counts_each_attempt_once(tmp_path, monkeypatch, demo_catalog, nb):
    monkeypatch.setenv("FAKE_OPENAI_KEY", KEY["FAKE_OPENAI_KEY"])
    per_tier = {"easy": 3, "medium": 1}
    easy = [t for t in plan_rrb(demo_catalog, nb, per_tier, 13, 0)[0] if t.tier == "easy"]
    server = FakeOpenAIServer(faults={api_title(demo_catalog[easy[0].anchor]): "malformed"})  # 3 rejected attempts
    llm = LLMConfig(backend="openai", base_url=server.base_url, openai_model="scripted", api_key_env="FAKE_OPENAI_KEY",
                    max_retries=1, timeout_s=30, max_new_tokens=200)
    out = tmp_path / "gen"
    cfg = GenerateConfig(tasks=["rrb"], rrb_per_tier=per_tier, max_attempts=3, writer=llm, output_dir=str(out))
    try:
        ref = run(cfg, catalog=demo_catalog, embeddings=nb.emb)
        ref_rows = sorted(json.dumps(r, sort_keys=True) for r in _rows(out / "rejected.jsonl"))
        mine = [r for r in _rows(out / "rejected.jsonl") if r["task_id"] == easy[0].task_id]
        assert [(r["attempt"], r["final"]) for r in mine] == [(0, False), (1, False), (2, True)]
        assert ref["rejection_reasons"]["writer reply is not a JSON object"] == 3

        # killed between attempts 2 and 3: the third attempt neither asked (no cache row) nor recorded
        lines = (out / "rejected.jsonl").read_text().splitlines(keepends=True)
        (out / "rejected.jsonl").write_text("".join(ln for ln in lines if not (easy[0].task_id in ln and '"final": true' in ln)))
        cache = (out / "llm_cache.jsonl").read_text().splitlines(keepends=True)
        last_bad = max(i for i, ln in enumerate(cache) if json.loads(ln)["reply"].startswith("Sure! {query: "))
        (out / "llm_cache.jsonl").write_text("".join(cache[:last_bad] + cache[last_bad + 1:]))
        sent = len(server.requests)
        again = run(cfg, catalog=demo_catalog, embeddings=nb.emb)
        assert len(server.requests) == sent + 1  # only the attempt never asked is asked
        assert sorted(json.dumps(r, sort_keys=True) for r in _rows(out / "rejected.jsonl")) == ref_rows
        assert _counts(again) == _counts(ref)  # not 5 rejections of that reason, and calls cumulative

        # the final row torn by a kill mid-write (it is the file's last line now)
        data = (out / "rejected.jsonl").read_bytes()
        (out / "rejected.jsonl").write_bytes(data[: len(data) - 40])
        torn = run(cfg, catalog=demo_catalog, embeddings=nb.emb)
        assert len(server.requests) == sent + 1  # replayed from the cache
        assert sorted(json.dumps(r, sort_keys=True) for r in _rows(out / "rejected.jsonl")) == ref_rows
        assert _counts(torn) == _counts(ref)
    finally:
        server.close()
    # calls are the cache's rows (the same count as usage.by_stage); hits add up over the invocations
    assert torn["gen/llm_calls"] == sum(s["calls"] for s in torn["usage"]["by_stage"].values()) == ref["gen/llm_calls"]
    invocations = _rows(out / "invocations.jsonl")
    assert len(invocations) == 3 and [i["llm_calls"] for i in invocations] == [ref["gen/llm_calls"], 1, 0]
    assert torn["gen/this_run/llm_cache_hits"] == 3 and again["gen/this_run/llm_cache_hits"] == 2
    assert torn["gen/llm_cache_hits"] == sum(i["llm_cache_hits"] for i in invocations) == ref["gen/llm_cache_hits"] + 5


# ---------------------------------------------------------------- refused before work starts
@pytest.mark.parametrize("data, message", [
    ({"n_probes": -1}, "n_probes=-1: must be >= 0"),
    ({"rrb_per_tier": {"easy": -1}}, "rrb_per_tier.easy=-1: must be a whole number >= 0"),
    ({"max_attempts": 0}, "max_attempts=0: must be >= 1"),
    ({"tasks": []}, "tasks=[]: give at least one of rrb, mcq, qa"),
    ({"writer": {"temperature": -3}}, "writer.temperature=-3: must be in [0, 2]"),
    ({"writer": {"temperature": 2.5}}, "writer.temperature=2.5: must be in [0, 2]"),
    ({"writer": {"max_new_tokens": 0}}, "writer.max_new_tokens=0: must be >= 1"),
    ({"judge": {"timeout_s": 0}}, "judge.timeout_s=0: must be > 0 (seconds)"),
    ({"writer": {"max_retries": -1}}, "writer.max_retries=-1: must be >= 0"),
    ({"writer": {"local_threads": 0}}, "writer.local_threads=0: must be >= 1"),
    ({"prices": {"m": {"input": -1, "output": 1}}}, "prices.m={'input': -1, 'output': 1}: prices must be >= 0"),
])
def test_bad_values_are_refused_naming_the_dotted_field(data, message):
    with pytest.raises(ValueError) as e:
        to_config(GenerateConfig, data)
    assert str(e.value).startswith(message)


def test_cli_refuses_a_bad_value_before_anything_loads_or_any_folder_exists(tmp_path):
    out = tmp_path / "gen"
    proc = subprocess.run([sys.executable, "generate.py", "n_probes=-1", f"output_dir={out}", f"hydra.run.dir={tmp_path / 'logs'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "n_probes=-1: must be >= 0" in proc.stderr
    assert not out.exists()  # nothing claimed: the corrected command is free to run


def test_the_corrected_command_after_a_failed_start_runs(tmp_path, monkeypatch, demo_catalog, nb):
    """A start that fails once the folder is known (the writer cannot start: no API key) leaves
    no identity behind; a folder an older version claimed but produced nothing in is reclaimed."""
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake-test-key")
    server = FakeOpenAIServer()
    out = tmp_path / "gen"

    def cfg(n, key, url=None):
        llm = LLMConfig(backend="openai", base_url=url or server.base_url, openai_model="scripted", api_key_env=key, timeout_s=30)
        return GenerateConfig(tasks=["rrb"], rrb_per_tier={"easy": n}, max_attempts=1, writer=llm, output_dir=str(out))

    try:
        with pytest.raises(ConfigError, match="writer.api_key_env='NO_SUCH_KEY'"):
            run(cfg(3, "NO_SUCH_KEY", "https://api.example.com/v1"), catalog=demo_catalog, embeddings=nb.emb)  # a remote server needs a key
        assert not (out / "generation_config.json").exists()
        summary = run(cfg(2, "FAKE_OPENAI_KEY"), catalog=demo_catalog, embeddings=nb.emb)  # another config: it runs
        assert summary["gen/rrb/easy/accepted"] + summary.get("gen/rrb/easy/rejected", 0) == 2
        # an identity left by an older version's failed start, with only its reply cache: reclaimed, cache kept
        other = tmp_path / "other"
        other.mkdir()
        ident = json.loads((out / "generation_config.json").read_text())
        ident["config"]["rrb_per_tier"]["easy"] = 9
        (other / "generation_config.json").write_text(json.dumps(ident))
        (other / "llm_cache.jsonl").write_text((out / "llm_cache.jsonl").read_text())
        sent = len(server.requests)
        corrected = cfg(2, "FAKE_OPENAI_KEY")
        corrected.output_dir = str(other)
        again = run(corrected, catalog=demo_catalog, embeddings=nb.emb)
        assert len(server.requests) == sent and again["gen/this_run/llm_cache_hits"] >= 2  # the cached replies were reused
        assert json.loads((other / "generation_config.json").read_text())["config"]["rrb_per_tier"] == {"easy": 2}
    finally:
        server.close()
