import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import SimpleNamespace

import pytest

from toolsense.audit.prompting import AuditPromptConfig, build_messages, parse_answer_1_10, parse_answer_prob
from toolsense.audit.redaction_eval import score_variants
from toolsense.audit.scorers import ScoreCache, ScoreItem, ScorerConfig, build_scorer, messages_sha256
from toolsense.utils.errors import ConfigError
from toolsense.utils.io import DataError


def test_answer_parsers():
    assert parse_answer_1_10("<answer>10</answer>") == 1.0
    assert parse_answer_1_10("so <answer> 4 </answer>") == pytest.approx(3 / 9)
    assert parse_answer_1_10("<answer>1</answer>") == 0.0
    for bad in ("<answer>0</answer>", "<answer>11</answer>", "7", "<answer>seven</answer>", ""):
        assert parse_answer_1_10(bad) is None
    assert parse_answer_prob("<answer>0.25</answer>") == 0.25 and parse_answer_prob("<answer>1.5</answer>") is None


def _items(traces, n=6, variant="original"):
    p = AuditPromptConfig()
    return [ScoreItem(r.id, variant, build_messages(r, p)) for r in traces.records[:n]]


def test_precomputed_scores_by_id_or_prompt_hash(tmp_path, demo_traces):
    items = _items(demo_traces, 3)
    rows = [{"id": items[0].id, "variant": "original", "score": 0.25},
            {"prompt_sha256": messages_sha256(items[1].messages), "text": "<answer>10</answer>"},
            {"id": items[2].id, "variant": "original", "score": None}]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    scorer = build_scorer(ScorerConfig(kind="precomputed", path=str(path)))
    assert scorer.answer(items) == [0.25, "<answer>10</answer>", None]
    with pytest.raises(DataError, match=r"s.jsonl: no score for record 'c0-3' variant 'original' \(prompt_sha256 "):
        scorer.answer(_items(demo_traces, 4)[3:])


@pytest.mark.parametrize("row, message", [
    ({"id": "a", "variant": "v", "score": 1.5}, "s.jsonl:2: field 'score' must be a number in [0, 1] or null, got 1.5"),
    ({"id": "a", "variant": "v"}, "s.jsonl:2: needs field 'score' (number or null) or 'text' (string)"),
    ({"score": 0.1}, "s.jsonl:2: needs 'prompt_sha256' or both 'id' and 'variant'"),
])
def test_precomputed_file_errors(tmp_path, row, message):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"id": "z", "variant": "v", "score": 0}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError) as e:
        build_scorer(ScorerConfig(kind="precomputed", path=str(path)))
    assert message in str(e.value)


def test_scorer_config_errors():
    with pytest.raises(KeyError, match=r"unknown audit scorer 'nope'; choose from \['hf', 'openai', 'precomputed'\]"):
        ScorerConfig(kind="nope")
    with pytest.raises(ValueError, match="scorer.kind=openai needs scorer.base_url and scorer.model"):
        ScorerConfig(kind="openai")
    with pytest.raises(ValueError, match="scorer.kind=precomputed needs scorer.path"):
        ScorerConfig(kind="precomputed")


class _Endpoint(BaseHTTPRequestHandler):
    """A tiny OpenAI-compatible chat endpoint: answers 9 when the prompt lists a KT report, else 2."""

    seen: list = []
    echo = False
    """Each answer also echoes the request's Authorization header and bare key (a proxy or model that repeats its input)."""

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization")
        type(self).seen.append({"auth": auth, "path": self.path, "body": body})
        prompt = body["messages"][-1]["content"]
        files = prompt.split("[list_files]")[1:]  # a redacted variant may have lost the section's name
        answer = "<answer>9</answer>" if files and "report_KT" in files[0].split("\n")[0] else "<answer>2</answer>"
        if type(self).echo:
            answer += f" (you sent Authorization: {auth}; key={auth.split()[-1]})"
        payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
                              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = HTTPServer(("127.0.0.1", 0), _Endpoint)
    server.timeout = 5
    _Endpoint.seen, _Endpoint.echo = [], False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_openai_endpoint_scorer_key_from_env_only(endpoint, demo_traces, tmp_path, monkeypatch):
    secret = "sk-test-do-not-store-123"
    monkeypatch.setenv("AUDIT_TEST_KEY", secret)
    cfg = ScorerConfig(kind="openai", base_url=endpoint, model="judge", api_key_env="AUDIT_TEST_KEY", max_retries=0, timeout_s=5)
    scorer = build_scorer(cfg)
    cache = ScoreCache(tmp_path / "cache")
    sets = {"original": demo_traces}
    idx = list(range(8))
    scores, unparseable = score_variants(scorer, cache, sets, idx, AuditPromptConfig(), 0.5, tmp_path / "samples.jsonl")
    expected = [8 / 9 if "report_KT" in r.section("list_files") else 1 / 9 for r in demo_traces.records[:8]]
    assert scores["original"].tolist() == pytest.approx(expected) and unparseable == {"original": 0}
    assert len(_Endpoint.seen) == 8
    assert all(s["auth"] == f"Bearer {secret}" and s["path"] == "/v1/chat/completions" for s in _Endpoint.seen)
    assert _Endpoint.seen[0]["body"]["temperature"] == 0.0 and _Endpoint.seen[0]["body"]["max_tokens"] == 16
    # a rerun is served from the cache: no new requests
    scores2, _ = score_variants(build_scorer(cfg), ScoreCache(tmp_path / "cache"), sets, idx, AuditPromptConfig(), 0.5,
                                tmp_path / "samples.jsonl")
    assert len(_Endpoint.seen) == 8 and scores2["original"].tolist() == scores["original"].tolist()
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert secret not in f.read_text()
    monkeypatch.delenv("AUDIT_TEST_KEY")
    assert build_scorer(cfg).client.api_key == "no-key"  # a loopback server needs no key: a placeholder is sent
    remote = ScorerConfig(kind="openai", base_url="https://api.example.com/v1", model="judge", api_key_env="AUDIT_TEST_KEY")
    with pytest.raises(ConfigError, match="scorer.api_key_env='AUDIT_TEST_KEY': set that environment variable"):
        build_scorer(remote)


def test_hf_scorer_on_tiny_random_counts_unparseable_and_caches(tiny_model_dir, demo_traces, tmp_path, monkeypatch):
    from toolsense.models import ModelConfig

    mc = ModelConfig("tiny_random", dtype="float32", eos_token="<|im_end|>")
    cfg = ScorerConfig(kind="hf", batch_size=4, max_new_tokens=13, unparseable_score=0.5)
    scorer = build_scorer(cfg, mc)
    cache = ScoreCache(tmp_path / "cache")
    idx = list(range(5))
    scores, unparseable = score_variants(scorer, cache, {"original": demo_traces}, idx, AuditPromptConfig(), 0.5,
                                         tmp_path / "samples.jsonl", batch=4)
    # a random 2-layer model never writes <answer>N</answer>: every answer counted, scored 0.5
    assert unparseable == {"original": 5} and scores["original"].tolist() == [0.5] * 5
    rows = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all(isinstance(r["answer"], str) and not r["parsed"] for r in rows)
    assert scorer.identity["model"] == "tiny_random" and len(scorer.identity["weights"]) == 16
    monkeypatch.setattr(scorer.model, "generate", lambda *a, **k: pytest.fail("cache miss on rerun"))
    again, _ = score_variants(scorer, ScoreCache(tmp_path / "cache"), {"original": demo_traces}, idx, AuditPromptConfig(), 0.5,
                              tmp_path / "samples2.jsonl", batch=4)
    assert again["original"].tolist() == [0.5] * 5


def test_hf_answer_probs_is_the_expected_answer_over_1_to_10(tiny_model_dir, demo_traces, tmp_path):
    """answer_probs = sum_v P(v) (v - 1) / 9 over the answers 1..10, P(v) the constrained sequence
    probability: first token renormalized over "1".."9", then after "1" over "0" vs "<" (the
    closing tag's first token). The joined ids are exactly what the fine-tune trains on."""
    import torch

    from toolsense.audit.config import FinetuneConfig
    from toolsense.audit.finetune import encode_examples
    from toolsense.models import ModelConfig

    mc = ModelConfig("tiny_random", dtype="float32", eos_token="<|im_end|>")
    scorer = build_scorer(ScorerConfig(kind="hf", method="answer_probs", batch_size=3), mc, AuditPromptConfig())
    recs = demo_traces.records[:5]
    scores, unparseable = score_variants(scorer, ScoreCache(tmp_path / "cache"), {"original": demo_traces}, list(range(5)),
                                         AuditPromptConfig(), 0.5, tmp_path / "samples.jsonl", batch=3)
    tok, model = scorer.tok, scorer.model
    digits = [tok(f"<answer>{d}", add_special_tokens=False)["input_ids"][-1] for d in range(1, 10)]
    zero, close = tok("<answer>10</answer>", add_special_tokens=False)["input_ids"][6:8]
    assert scorer.trie.paths == [(digits[0],)] and scorer.trie.branches[(digits[0],)] == sorted([zero, close])
    expected = []
    for x, _ in encode_examples(tok, recs, AuditPromptConfig(), FinetuneConfig()):  # prompt + "<answer>" + digit
        with torch.no_grad():
            p = model(input_ids=torch.tensor([x[:-1]])).logits[0, -1, digits].softmax(-1)
            q = model(input_ids=torch.tensor([x[:-1] + [digits[0]]])).logits[0, -1, [zero, close]].softmax(-1)
        probs = [p[0] * q[1]] + [p[d] for d in range(1, 9)] + [p[0] * q[0]]  # answers 1, 2..9, 10
        expected.append(float(sum(pv * v / 9 for v, pv in enumerate(probs))))
    assert scores["original"].tolist() == pytest.approx(expected, abs=1e-5) and unparseable == {"original": 0}
    assert len(set(round(s, 6) for s in expected)) > 1  # a continuous score, not one constant
    gen = build_scorer(ScorerConfig(kind="hf", max_new_tokens=13), mc)
    from toolsense.audit.scorers import cache_key

    assert gen.decoding["do_sample"] is False and scorer.decoding["method"] == "answer_probs"
    assert cache_key(gen, _items(demo_traces, 1)[0].messages) != cache_key(scorer, _items(demo_traces, 1)[0].messages)
    with pytest.raises(ValueError, match="scorer.method=answer_probs needs a prompt.parser with answer choices"):
        build_scorer(ScorerConfig(kind="hf", method="answer_probs"), mc, AuditPromptConfig(parser="answer_prob"))
    with pytest.raises(ValueError, match=r"scorer.method=answer_probs needs scorer.kind=hf \(got openai\)"):
        ScorerConfig(kind="openai", base_url="http://x", model="m", method="answer_probs")


class _ScriptedLM:
    """Logits chosen by the last input token: after ">" (the answer prefix) P("1") = P("2") = 1/2;
    after "1", P("0") = 3/4 and P("<") = 1/4. Every other token gets a large negative logit."""

    def __init__(self, table: dict[int, dict[int, float]], vocab: int):
        self.table, self.vocab, self.device = table, vocab, "cpu"

    def __call__(self, input_ids, logits_to_keep, **_):
        import torch

        out = torch.full((*input_ids.shape, self.vocab), -1e4)
        for b, row in enumerate(input_ids.tolist()):
            for t, tok_id in enumerate(row):
                for nxt, p in self.table.get(tok_id, {}).items():
                    out[b, t, nxt] = math.log(p)
        return SimpleNamespace(logits=out[:, -logits_to_keep:])


def test_answer_probs_reads_10_as_ten_not_one(tiny_model_dir, demo_traces):
    """Hand-computed: P(1) = 1/2 * 1/4, P(10) = 1/2 * 3/4, P(2) = 1/2, so the score is
    1/8 * 0 + 3/8 * 9/9 + 1/2 * 1/9 = 0.375 + 0.0556 = 0.43056. The old digit-only reading took
    P("1") as the answer 1: 1/2 * 0 + 1/2 * 1/9 = 0.0556."""
    from toolsense.models import ModelConfig

    mc = ModelConfig("tiny_random", dtype="float32", eos_token="<|im_end|>")
    scorer = build_scorer(ScorerConfig(kind="hf", method="answer_probs"), mc, AuditPromptConfig())
    ids = scorer.tok("<answer>10</answer>", add_special_tokens=False)["input_ids"]
    gt, one, zero, lt = ids[4], ids[5], ids[6], ids[7]
    two = scorer.tok("<answer>2", add_special_tokens=False)["input_ids"][-1]
    scorer.model = _ScriptedLM({gt: {one: 0.5, two: 0.5}, one: {zero: 0.75, lt: 0.25}}, len(scorer.tok))
    score = scorer.answer(_items(demo_traces, 2))
    assert score == pytest.approx([0.375 + 0.5 / 9] * 2, abs=1e-6)
    # all mass on "1" then "0": the answer 10, the top of the scale
    scorer.model = _ScriptedLM({gt: {one: 1.0}, one: {zero: 1.0}}, len(scorer.tok))
    assert scorer.answer(_items(demo_traces, 1)) == pytest.approx([1.0], abs=1e-6)


def test_generate_limit_must_fit_the_answer_10(tiny_model_dir):
    """tiny_random writes "<answer>10</answer>" in 13 tokens: 8 would cut it (read as nothing)."""
    from toolsense.models import ModelConfig

    mc = ModelConfig("tiny_random", dtype="float32", eos_token="<|im_end|>")
    with pytest.raises(ValueError, match=r"scorer.max_new_tokens=8 cuts the answer '<answer>10</answer>' \(13 tokens"):
        build_scorer(ScorerConfig(kind="hf", max_new_tokens=8), mc)
    assert parse_answer_1_10("<answer>10</answer>") == 1.0 and parse_answer_1_10("<answer>1</answer>") == 0.0


def test_audit_job_scrubs_a_key_the_endpoint_echoes(endpoint, demo_traces_path, tmp_path, monkeypatch):
    """Issue #45 item 8: `audit.py audit/scorer=openai` wrote the echoed key into samples.jsonl and the
    score cache. The key here is not key-shaped (no sk- prefix): only its value, from the
    environment, tells it; a cache written before answers were scrubbed is cleaned too."""
    from tests.audit.conftest import compose_audit
    from toolsense.audit.config import audit_config
    from toolsense.audit.run import run

    secret = "proxy-passphrase-7431-do-not-store"
    monkeypatch.setenv("AUDIT_TEST_KEY", secret)
    _Endpoint.echo = True
    cache = tmp_path / "cache"
    ScoreCache(cache).put("0" * 64, f"<answer>3</answer> key={secret}")  # left by a run before the fix
    out = tmp_path / "audit"
    res = run(audit_config(compose_audit([
        f"data.path={demo_traces_path}", "audit/scorer=openai", f"scorer.base_url={endpoint}", "scorer.model=judge",
        "scorer.api_key_env=AUDIT_TEST_KEY", f"scorer.cache_dir={cache}", "pt2d.enabled=false", "dilution.enabled=false",
        "stats.n_boot=50", f"output_dir={out}"])))
    assert _Endpoint.seen and all(s["auth"] == f"Bearer {secret}" for s in _Endpoint.seen)  # the key was sent, and echoed
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 5 * res["redaction"]["n_scored"]
    assert all(s["answer"].endswith("(you sent Authorization: Bearer ***; key=***)") and s["parsed"] for s in samples)
    written = [f for root in (out, cache) for f in root.rglob("*") if f.is_file()]
    assert {f.name for f in written} >= {"samples.jsonl", "scores.jsonl", "results.json", "report.md"}
    assert [f for f in written if secret in f.read_text(encoding="utf-8", errors="replace")] == []
    assert ScoreCache(cache).get("0" * 64) == "<answer>3</answer> key=***"
