"""One log line per repeated warning (with a file listing them all), and progress bars that are
present on long loops and quiet on short ones."""

import json
import logging

from toolsense.catalog import Query, load_toolsense
from toolsense.decoding.retrieval import Retrieved
from toolsense.evaluation.benchmarks import Benchmark
from toolsense.evaluation.config import MetricsConfig
from toolsense.evaluation.tasks import evaluate_ranking
from toolsense.index.trie import Trie
from toolsense.utils.progress import progress
from toolsense.utils.warnings import summarise

log = logging.getLogger("test.summarise")


def test_summarise_logs_once_and_lists_everything(tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path))
    items = [f"f.jsonl:{i}: item {i}" for i in range(1, 8)]
    with caplog.at_level(logging.WARNING):
        path = summarise(log, items, "things dropped")
        again = summarise(log, list(items), "things dropped")
        assert summarise(log, [], "things dropped") is None
    assert path == again and path.parent == tmp_path / "reports"  # content-addressed: same items, same file
    assert path.read_text().splitlines() == ["# 7 things dropped", *items]
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 2 and msgs[0] == f"7 things dropped; all listed in {path} (first: f.jsonl:1: item 1)"
    other = summarise(log, items[:3], "things dropped")
    assert other != path and path.read_text().count("\n") == 8  # other items never overwrite a listing
    explicit = summarise(log, items, "things dropped", tmp_path / "out" / "list.txt")
    assert explicit == tmp_path / "out" / "list.txt" and explicit.is_file()


def test_progress_quiet_for_small_loops_or_when_disabled(monkeypatch):
    monkeypatch.delenv("TOOLSENSE_PROGRESS", raising=False)
    assert not progress(range(20), desc="big", min_total=10).disable
    assert progress(range(5), desc="small", min_total=10).disable
    assert progress(iter(range(5)), desc="unknown length", min_total=10).disable is False
    assert progress(range(20), desc="off", show=False).disable
    monkeypatch.setenv("TOOLSENSE_PROGRESS", "0")
    assert progress(range(20), desc="big").disable


def test_trie_build_and_big_catalog_load_show_a_bar(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TOOLSENSE_PROGRESS", raising=False)
    Trie.build({f"t{i}": [i] for i in range(10_000)}, eos_id=-1)
    assert "trie" in capsys.readouterr().err
    Trie.build({f"t{i}": [i] for i in range(100)}, eos_id=-1)
    assert "trie" not in capsys.readouterr().err  # small tries stay quiet
    path = tmp_path / "big.jsonl"
    desc = "x" * 600
    path.write_text("".join(json.dumps({"tool_name": f"S&&a{i}", "api_description": desc}) + "\n" for i in range(2000)))
    assert len(load_toolsense(path)) == 2000
    assert "catalog big.jsonl" in capsys.readouterr().err


def test_missing_gold_tools_are_one_line_and_a_listing_in_the_eval_dir(tmp_path, caplog):
    items = [Query("q1", "a", ("A&&x", "Gone&&1")), Query("q2", "b", ("Gone&&2",)), Query("q3", "c", ("A&&x",))]
    bench = Benchmark("bench", "retrieval", items)

    def ranker(qs):
        for q in qs:
            yield Retrieved(q, q.text, [{"tool": "A&&x", "score": 0.0}], None)

    metrics = MetricsConfig(ks=[1], resamples=10)
    with caplog.at_level(logging.WARNING):
        res = evaluate_ranking(bench, "sys", ranker, {"A&&x"}, metrics, tmp_path / "eval", {})
    assert res["missing"]["count"] == 2
    msgs = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    listing = tmp_path / "eval" / "missing_gold.txt"
    assert len(msgs) == 1 and msgs[0].startswith("2 gold tools of bench not in the sys index (2 queries affected")
    assert str(listing) in msgs[0]
    assert listing.read_text().splitlines()[1:] == ["Gone&&1", "Gone&&2"]


def test_heartbeat_keeps_a_slow_ranking_loop_visible(tmp_path, capsys, monkeypatch):
    """One slow item (a batch of beam searches at catalog scale) must not leave the log silent:
    the bar is redrawn every interval while the item runs, and not after the loop ends."""
    import io
    import time

    from tqdm import tqdm

    from toolsense.evaluation import tasks
    from toolsense.utils.progress import heartbeat

    out = io.StringIO()
    bar = tqdm(total=1, desc="slow", file=out, mininterval=0)
    with heartbeat(bar, every_s=0.05):
        time.sleep(0.4)
    n = out.getvalue().count("slow")
    assert n >= 4  # redrawn while nothing completed (the initial draw alone is 1)
    time.sleep(0.2)
    assert out.getvalue().count("slow") == n  # the thread stopped with the block
    bar.close()

    beats = []
    monkeypatch.setattr(tasks, "heartbeat", lambda b: heartbeat(b, every_s=0.05))
    monkeypatch.setattr(tqdm, "refresh", lambda self, *a, **k: beats.append(1))

    def slow_ranker(qs):
        for q in qs:
            time.sleep(0.3)
            yield Retrieved(q, q.text, [{"tool": "A&&x", "score": 0.0}], None)

    bench = Benchmark("bench", "retrieval", [Query("q1", "a", ("A&&x",))])
    evaluate_ranking(bench, "sys", slow_ranker, {"A&&x"}, MetricsConfig(ks=[1], resamples=10), tmp_path, {})
    assert len(beats) >= 3  # evaluate_ranking's bar was kept alive during the slow item
