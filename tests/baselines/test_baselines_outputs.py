import json
from pathlib import Path

import pytest

from toolsense.baselines.config import BaselineConfig
from toolsense.baselines.rankers import build_baseline
from toolsense.catalog import load_catalog, load_query_jsonl
from toolsense.evaluation.outputs import SampleLog
from toolsense.reporting.tables import estimate, markdown_table
from toolsense.utils.errors import ConfigError

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "evaluation"


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_baselines_rank_the_obvious_tool_first(kind):
    cat = load_catalog(ASSETS / "tools.jsonl")
    queries = load_query_jsonl(ASSETS / "queries.jsonl")
    ranker = build_baseline(cat, BaselineConfig(kind=kind, batch_size=3), top=50)
    out = {r.query.query_id: r for r in ranker.run(queries)}
    assert len(out) == len(queries)
    assert all(len(r.constrained) == 12 for r in out.values())  # top = min(50, catalog size)
    assert out["q5"].constrained[0]["tool"] == "Translate It&&Translate"
    assert out["q6"].constrained[0]["tool"] == "Café Finder&&Nearby cafés"  # canonical name = as written (ToolGen tokens keep accents)
    scores = [x["score"] for x in out["q5"].constrained]
    assert scores == sorted(scores, reverse=True)


def test_openai_baseline_needs_key_from_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_baseline(load_catalog(ASSETS / "tools.jsonl"), BaselineConfig(kind="openai"), 5)


def test_sample_log_resumes_and_drops_a_torn_last_line(tmp_path):
    path = tmp_path / "samples.jsonl"
    with SampleLog(path) as log:
        log.add({"item_id": "a", "v": 1})
        log.add({"item_id": "b", "v": 2})
    with open(path, "a") as f:
        f.write('{"item_id": "c", "v"')  # interrupted mid-write
    with SampleLog(path) as log:
        assert log.done("a") and log.done("b") and not log.done("c")
        log.add({"item_id": "c", "v": 3})
        assert [r["v"] for r in log.ordered(["c", "a", "zz"])] == [3, 1]
    assert [json.loads(x)["item_id"] for x in path.read_text().splitlines()] == ["a", "b", "c"]
    path.write_text('{"item_id": "a"}\nbroken\n{"item_id": "b"}\n')
    with pytest.raises(ValueError, match=r"samples.jsonl:2: malformed JSON"):
        SampleLog(path)


def test_table_formatting():
    assert estimate({"value": 0.5, "lo": 0.25, "hi": 0.75}) == "50.0 [25.0, 75.0]"
    assert estimate({"value": 0.5, "lo": 0.25, "hi": 0.75}, pct=False) == "0.50 [0.25, 0.75]"
    assert estimate(None) == "—"
    assert markdown_table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---|\n| 1 | 2 |\n"


def test_checkpoint_hash_is_a_content_hash_cached_by_size_and_mtime(tmp_path):
    import hashlib
    import os

    from toolsense.evaluation.fingerprint import CHECKPOINT_HASH_CACHE, checkpoint_sha256

    (tmp_path / "model.safetensors").write_bytes(b"weights-1")
    (tmp_path / "config.json").write_text("{}")
    sha = lambda b: hashlib.sha256(b).hexdigest()  # noqa: E731
    expected = hashlib.sha256(f"config.json\0{sha(b'{}')}\nmodel.safetensors\0{sha(b'weights-1')}\n".encode()).hexdigest()
    assert checkpoint_sha256(tmp_path) == expected
    cache = json.loads((tmp_path / CHECKPOINT_HASH_CACHE).read_text())
    assert cache["model.safetensors"]["sha256"] == sha(b"weights-1")
    # the cache is trusted while size and mtime are unchanged (a planted hash proves it was read) ...
    cache["config.json"]["sha256"] = "planted"
    (tmp_path / CHECKPOINT_HASH_CACHE).write_text(json.dumps(cache))
    assert checkpoint_sha256(tmp_path) != expected
    # ... and a rewritten file (same size, other bytes, new mtime) is hashed again
    st = (tmp_path / "model.safetensors").stat()
    (tmp_path / "model.safetensors").write_bytes(b"weights-2")
    os.utime(tmp_path / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    (tmp_path / CHECKPOINT_HASH_CACHE).unlink()
    assert checkpoint_sha256(tmp_path) != expected


def test_claim_resumes_refuses_and_overwrites_only_the_evaluations_own_files(tmp_path, caplog):
    from toolsense.evaluation.fingerprint import FINGERPRINT_FILE, FingerprintMismatch, claim

    a, b = tmp_path / "bench" / "model", tmp_path / "bench" / "bm25"
    fa, fb = {"system": {"stage": "stage2"}, "decoding": {"beam_width": 50, "ks": [1, 5]}}, {"system": {"baseline": "bm25"}}
    claim([(a, fa), (b, fb)])
    assert json.loads((a / FINGERPRINT_FILE).read_text())["fingerprint"] == fa
    for d in (a, b):
        (d / "samples.jsonl").write_text('{"item_id": "q"}\n')
    (a / "samples.rank1.jsonl").write_text("")
    (a / "notes.txt").write_text("mine")
    claim([(a, json.loads(json.dumps(fa))), (b, fb)])  # an exact match (lists from JSON) resumes
    assert (a / "samples.jsonl").exists()
    other = {"system": {"stage": "stage1"}, "decoding": {"beam_width": 50, "ks": [1, 10]}}
    with pytest.raises(FingerprintMismatch) as e:
        claim([(a, other), (b, fb)])
    assert "system.stage: 'stage2' (on disk) vs 'stage1' (now)" in str(e.value)
    assert "decoding.ks: [1, 5] (on disk) vs [1, 10] (now)" in str(e.value) and str(b) not in str(e.value)
    with caplog.at_level("WARNING"):
        claim([(a, other), (b, fb)], overwrite=True)
    assert sorted(p.name for p in a.iterdir()) == ["notes.txt", FINGERPRINT_FILE]
    assert "deleted samples.jsonl, samples.fingerprint.json, samples.rank1.jsonl" in caplog.text
    assert json.loads((a / FINGERPRINT_FILE).read_text())["fingerprint"] == other
    assert (b / "samples.jsonl").exists()  # the matching evaluation was left to resume


def test_a_claim_that_computed_nothing_does_not_block_the_corrected_rerun(tmp_path):
    """Issue 38: ``metrics.ks=[1.5]`` crashed after the folder was claimed; the rerun with ``ks=[1]`` was
    refused ("samples of another evaluation") though the folder held no sample. A folder holding only
    its fingerprint is claimed anew; once one sample exists, another evaluation is refused as before."""
    from toolsense.evaluation.fingerprint import FINGERPRINT_FILE, FingerprintMismatch, claim

    d = tmp_path / "bench" / "model"
    claim([(d, {"decoding": {"ks": [1.5]}})])  # the failed start: claimed, then crashed before its first sample
    claim([(d, {"decoding": {"ks": [1]}})])
    assert json.loads((d / FINGERPRINT_FILE).read_text())["fingerprint"] == {"decoding": {"ks": [1]}}
    (d / "samples.jsonl").write_text('{"item_id": "q"}\n')
    with pytest.raises(FingerprintMismatch, match=r"decoding.ks: \[1\] \(on disk\) vs \[5\] \(now\)"):
        claim([(d, {"decoding": {"ks": [5]}})])
