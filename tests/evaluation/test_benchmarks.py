import json

import pytest

from toolsense.catalog import DataError
from toolsense.evaluation.benchmarks import BENCHMARKS, BenchmarkConfig, load_benchmark


def test_registry_names_and_unknown_loader():
    assert {"toolbench", "rrb", "query_jsonl", "demo", "mcq", "qa"} <= set(BENCHMARKS.names())
    with pytest.raises(ValueError, match=r"benchmark.loader='nope': choose from \['demo', 'mcq'"):
        BenchmarkConfig(loader="nope")  # refused when the config is built, before any file is read


def test_released_rrb_sample(shared_data):
    b = load_benchmark(BenchmarkConfig(loader="rrb", path=str(shared_data / "samples" / "rrb_sample.jsonl")))
    assert b.kind == "retrieval" and len(b.items) == 24 and len(b.sha256) == 64
    tiers = [b.tier_of(q) for q in b.items]
    assert {t: tiers.count(t) for t in set(tiers)} == {"easy": 8, "medium": 8, "hard": 8}
    first = b.items[0]
    assert first.tools == ("JobSearch&&api/v2/Jobs/Latest",) and len(first.meta["pool"]) == 14
    assert all(len(q.tools) == 1 for q in b.items if q.meta["tier"] == "easy")
    assert all(len(q.tools) >= 2 for q in b.items if q.meta["tier"] != "easy")  # 'tool' given as a list


def test_released_probe_samples(shared_data):
    mcq = load_benchmark(BenchmarkConfig(loader="mcq", path=str(shared_data / "samples" / "mcq_sample.jsonl")))
    assert mcq.kind == "mcq" and len(mcq.items) == 20
    it = mcq.items[0]
    assert it.options[0] == "Crops images to specified size" and len(it.options) == 4 and it.answer == 0
    assert it.tool == "Image cropping&&Image cropping"
    qa = load_benchmark(BenchmarkConfig(loader="qa", path=str(shared_data / "samples" / "qa_sample.jsonl")))
    assert len(qa.items) == 20 and qa.items[0].options == ("Yes", "No") and qa.items[0].answer == 0
    assert qa.items[2].answer == 1  # "answer": "No"


def test_toolbench_queries_with_group_tier(shared_data):
    b = load_benchmark(BenchmarkConfig(loader="toolbench", path=str(shared_data / "toolbench_queries" / "G1_instruction.json")))
    assert len(b.items) == 163 and {b.tier_of(q) for q in b.items} == {"G1"}
    assert all("&&" in t for q in b.items for t in q.tools)


def test_demo_benchmarks_and_limit():
    std = load_benchmark(BenchmarkConfig(loader="demo", style="verbose", split="test", label="standard"))
    real = load_benchmark(BenchmarkConfig(loader="demo", style="short", split="test", limit=5))
    assert std.name == "standard" and len(std.items) == 58 and all(q.style == "verbose" for q in std.items)
    assert len(real.items) == 5 and all(q.style == "short" for q in real.items)
    assert len(load_benchmark(BenchmarkConfig(loader="mcq")).items) == 126


def _write(tmp_path, name, rows):
    p = tmp_path / name
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return str(p)


GOOD_RRB = {"sample_id": "s1", "query": "q", "tool": {"tool_name": "A&&b"}, "analyzed_tools": [{"tool_name": "A&&b"}], "complexity": "easy"}


@pytest.mark.parametrize("loader,bad,message", [
    ("rrb", "{not json", r"rrb.jsonl:2: malformed JSON"),
    ("rrb", {"sample_id": "s2", "query": "q"}, r"rrb.jsonl:2: field 'tool' must be a non-empty list of tools"),
    ("rrb", {"sample_id": "s2", "query": "", "tool": {"tool_name": "A&&b"}}, r"rrb.jsonl:2: field 'query' is missing or empty"),
    ("rrb", {"query": "q", "tool": {"tool_name": "nosep"}}, r"rrb.jsonl:2: field 'tool\[0\]' \('nosep'\) must look like 'Service&&API'"),
    ("mcq", {"id": "m", "question": "?", "correct_answer": "a", "wrong_answers": ["b", "c"], "tool": {"tool_name": "A&&b"}},
     r"mcq.jsonl:2: field 'wrong_answers' must be a list of 3 non-empty strings"),
    ("mcq", {"id": "m", "question": "?", "correct_answer": "a", "wrong_answers": ["a", "c", "d"], "tool": {"tool_name": "A&&b"}},
     r"mcq.jsonl:2: field 'wrong_answers' repeats an option"),
    ("qa", {"id": "q", "question": "?", "answer": "Maybe", "tool": {"tool_name": "A&&b"}},
     r"qa.jsonl:2: field 'answer' must be 'Yes' or 'No'"),
    ("qa", {"id": "q", "question": "?", "answer": "Yes", "tool": "A&&b"}, r"qa.jsonl:2: field 'tool' must be a tool object"),
    # a repeated probe id would be scored and counted twice (issue 38: n=4 for 3 ids); retrieval files refuse it too
    ("mcq", {"id": "m0", "question": "??", "correct_answer": "x", "wrong_answers": ["b", "c", "d"], "tool": {"tool_name": "A&&b"}},
     r"mcq.jsonl:2: repeated id 'm0' \(first at line 1\)"),
    ("qa", {"id": "q0", "question": "??", "answer": "Yes", "tool": {"tool_name": "A&&b"}},
     r"qa.jsonl:2: repeated id 'q0' \(first at line 1\)"),
])
def test_malformed_line_names_file_line_and_field(tmp_path, loader, bad, message):
    good = {"rrb": GOOD_RRB,
            "mcq": {"id": "m0", "question": "?", "correct_answer": "a", "wrong_answers": ["b", "c", "d"], "tool": {"tool_name": "A&&b"}},
            "qa": {"id": "q0", "question": "?", "answer": "No", "tool": {"tool_name": "A&&b"}}}[loader]
    path = _write(tmp_path, f"{loader}.jsonl", [good, bad])
    with pytest.raises(DataError, match=message):
        load_benchmark(BenchmarkConfig(loader=loader, path=path))


def test_empty_after_filtering_is_an_error(tmp_path):
    path = _write(tmp_path, "q.jsonl", [{"query": "x", "tools": ["A&&b"], "split": "train"}])
    with pytest.raises(DataError, match="has no items after filtering"):
        load_benchmark(BenchmarkConfig(loader="query_jsonl", path=path, split="test"))


def _conf(name):
    from omegaconf import OmegaConf

    from toolsense.utils.compose import conf_dir
    from toolsense.utils.config import to_config

    return to_config(BenchmarkConfig, OmegaConf.load(conf_dir() / "benchmark" / f"{name}.yaml"), name)


def test_toolbench_groups_pool_files_as_the_paper(shared_data):
    import json as _json

    per_file = {}
    for stem in ("G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category", "G3_instruction"):
        per_file[stem] = [str(q["query_id"]) for q in _json.loads((shared_data / "toolbench_queries" / f"{stem}.json").read_text())]
    raw_ids = [i for ids in per_file.values() for i in ids]
    assert len(raw_ids) == len(set(raw_ids))  # the released files share no query id; pooled ids are prefixed anyway
    g1 = load_benchmark(_conf("toolbench_g1"))
    assert g1.name == "G1" and len(g1.items) == 163 + 153 + 158 and len(g1.files) == 3 and len(g1.sha256) == 64
    tiers = [g1.tier_of(q) for q in g1.items]
    assert {t: tiers.count(t) for t in set(tiers)} == {"G1_instruction": 163, "G1_category": 153, "G1_tool": 158}
    assert len({q.query_id for q in g1.items}) == 474
    assert g1.items[0].query_id == f"G1_instruction/{per_file['G1_instruction'][0]}"
    assert g1.items[163].query_id == f"G1_category/{per_file['G1_category'][0]}"
    g2 = load_benchmark(_conf("toolbench_g2"))
    assert len(g2.items) == 106 + 124 and len({q.query_id for q in g2.items}) == 230
    # G2_category itself repeats one query (ids 43200 and 43201, same text and gold): kept twice, as released
    assert len({q.text for q in g2.items}) == 229
    assert len(load_benchmark(_conf("toolbench_g3")).items) == 61


def test_pooled_files_sharing_ids_stay_distinct_queries(tmp_path):
    item = {"query": "find a cafe", "query_id": 7, "relevant APIs": [["Cafe", "near"]]}
    a, b = tmp_path / "G1_a.json", tmp_path / "G1_b.json"
    a.write_text(json.dumps([item]))
    b.write_text(json.dumps([{**item, "query": "other"}]))
    pooled = load_benchmark(BenchmarkConfig(loader="toolbench", paths=[str(a), str(b)], label="G1"))
    assert [q.query_id for q in pooled.items] == ["G1_a/7", "G1_b/7"] and pooled.items[1].text == "other"
    one = load_benchmark(BenchmarkConfig(loader="toolbench", path=str(a)))
    assert pooled.sha256 != one.sha256 and one.items[0].query_id == "7"


@pytest.mark.parametrize("kwargs,message", [
    ({"loader": "toolbench", "path": "a.json", "paths": ["b.json"]}, "benchmark.path and benchmark.paths are exclusive"),
    ({"loader": "rrb", "paths": ["b.json"]}, "benchmark.paths pools ToolBench query files"),
    ({"loader": "rrb", "missing": "ignore"}, "benchmark.missing must be 'count' or 'drop', got 'ignore'"),
])
def test_benchmark_config_rejects_bad_combinations(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BenchmarkConfig(**kwargs)


def test_released_configs_need_a_path_and_samples_are_named_apart(shared_data):
    for name, n in (("rrb", 24), ("mcq", 20), ("qa", 20)):
        with pytest.raises(ValueError, match=rf"benchmarks.x.path is required: point it at the released {name}.jsonl"):
            load_benchmark(_conf(name), where="benchmarks.x")
        sample = load_benchmark(_conf(f"{name}_sample"))
        assert sample.is_sample and len(sample.items) == n and sample.name == name
        released = _conf(name)
        released.path = sample.path  # a sample file behind the released config is still recognised by its name
        assert load_benchmark(released).is_sample
    assert not load_benchmark(BenchmarkConfig(loader="mcq")).is_sample  # the demo probes


def test_toolbench_suite_composes_the_three_groups(shared_data):
    from omegaconf import OmegaConf

    from toolsense.utils.compose import compose

    cfg = compose("evaluate", overrides=["suite=toolbench", "benchmarks.G1.missing=drop"])
    benches = OmegaConf.to_container(cfg.benchmarks, resolve=True)
    assert list(benches) == ["G1", "G2", "G3"] and [len(b["paths"]) for b in benches.values()] == [3, 2, 1]
    assert benches["G1"]["missing"] == "drop" and benches["G2"]["missing"] == "count"
    assert all(p.startswith(str(shared_data)) or "shared/data" in p for b in benches.values() for p in b["paths"])


def _without_ids(src, dest, repeat: int | None = None):
    """``src``'s lines with their ids removed (and line ``repeat``, 1-based, appended once more)."""
    rows = [{k: v for k, v in json.loads(line).items() if k not in ("id", "query_id", "sample_id")}
            for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows += [rows[repeat - 1]] if repeat else []
    dest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return dest, len(rows)


@pytest.mark.parametrize("loader, src", [("mcq", "probes_mcq.jsonl"), ("qa", "probes_qa.jsonl"),
                                         ("query_jsonl", "queries.jsonl")])
def test_a_repeated_line_without_id_is_refused_naming_both_lines(tmp_path, loader, src):
    """Issue #45 item 5: 9 items + one repeated line scored n=10 (the repeat got its own line-made id)."""
    from toolsense.catalog.loaders import DEMO_DIR

    path, n = _without_ids(DEMO_DIR / src, tmp_path / "items.jsonl", repeat=4)
    with pytest.raises(DataError, match=rf"items.jsonl:{n}: repeats the item at .*items.jsonl:4 \(same content"):
        load_benchmark(BenchmarkConfig(loader=loader, path=str(path), split=None))
    once, _ = _without_ids(DEMO_DIR / src, tmp_path / "once.jsonl")
    assert len(load_benchmark(BenchmarkConfig(loader=loader, path=str(once), split=None)).items) == n - 1


def test_a_repeated_rrb_line_without_id_is_refused(shared_data, tmp_path):
    path, n = _without_ids(shared_data / "samples" / "rrb_sample.jsonl", tmp_path / "rrb.jsonl", repeat=2)
    with pytest.raises(DataError, match=rf"rrb.jsonl:{n}: repeats the item at .*rrb.jsonl:2 "):
        load_benchmark(BenchmarkConfig(loader="rrb", path=str(path)))


@pytest.mark.parametrize("loader, name, n", [("mcq", "mcq_dev", 230), ("qa", "qa_dev", 232), ("rrb", "rrb_dev", 243)])
def test_released_benchmarks_hold_no_repeated_content(shared_data, tmp_path, loader, name, n):
    """The released files (and the demo probes above) keep their n even read without their ids:
    the content check refuses no shipped benchmark (a probe question shared by many tools is not a repeat)."""
    path, _ = _without_ids(shared_data / "released" / f"{name}.jsonl", tmp_path / f"{name}.jsonl")
    assert len(load_benchmark(BenchmarkConfig(loader=loader, path=str(path))).items) == n


def test_a_repeated_toolbench_item_without_query_id_is_refused(shared_data, tmp_path):
    items = [{k: v for k, v in q.items() if k != "query_id"}
             for q in json.loads((shared_data / "toolbench_queries" / "G1_instruction.json").read_text())]
    once, twice = tmp_path / "G1_once.json", tmp_path / "G1_twice.json"
    once.write_text(json.dumps(items))
    twice.write_text(json.dumps(items + [items[5]]))
    assert len(load_benchmark(BenchmarkConfig(loader="toolbench", path=str(once))).items) == 163
    with pytest.raises(DataError, match=r"G1_twice.json: item 164: repeats the item at .*G1_twice.json: item 6 "):
        load_benchmark(BenchmarkConfig(loader="toolbench", path=str(twice)))


def test_every_benchmark_of_a_suite_is_loaded_by_one_helper_under_its_label():
    """load_benchmarks: the demo suite's four benchmarks by label, each named by it; probes=False leaves the
    probe sets unread; a missing file is named. The evaluation, the leakage refusal, the
    exports, the rater sheets and the paper's rows all load a suite through it (nothing else loops over
    benchmark_sections)."""
    import re
    from pathlib import Path as _Path

    from toolsense.evaluation.benchmarks import load_benchmarks
    from toolsense.evaluation.config import compose_evaluate

    cfg = compose_evaluate(["suite=demo"])
    benches = load_benchmarks(cfg.benchmark, cfg.benchmarks)
    assert sorted(benches) == ["mcq", "qa", "realistic", "standard"]
    assert all(b.name == label for label, b in benches.items()) and benches["mcq"].kind == "mcq"
    assert sorted(load_benchmarks(cfg.benchmark, cfg.benchmarks, probes=False)) == ["realistic", "standard"]
    broken = compose_evaluate(["suite=demo", "+benchmark@benchmarks.mine=generated", "benchmarks.mine.path=/nonexistent/q.jsonl"])
    with pytest.raises(FileNotFoundError, match="/nonexistent/q.jsonl"):
        load_benchmarks(broken.benchmark, broken.benchmarks)
    package = _Path(__file__).resolve().parents[2] / "toolsense"
    loops = [p.relative_to(package).as_posix() for p in package.rglob("*.py")
             if re.search(r"benchmark_sections\(.*\)\.items\(\)", p.read_text(encoding="utf-8"))]
    assert loops == ["evaluation/benchmarks.py"], loops
