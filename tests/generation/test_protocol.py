"""The ToolSense generation protocol, check by check, on constructed inputs and hand-made LLM
replies: writer-chosen answer sets, the name-leak check, the judge's rubric and whole-pool
false-negative audit, clones, probe dedupe / generic questions / QA balance / skipped cards,
stratified anchors and the leakage guard for training data."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from tests.generation.scripted import HandLLM, ScriptedLLM
from toolsense.catalog import Catalog, Tool
from toolsense.generation.checks import check_answer_set, check_mcq, check_qa, leaked_names
from toolsense.generation.config import GenerateConfig
from toolsense.generation.dedupe import QuestionDeduper, minilm_encoder
from toolsense.generation.guard import HeldOut
from toolsense.generation.prompts import tool_card
from toolsense.generation.rrb import RRBTask, make_rrb_item, plan_rrb
from toolsense.generation.runner import run
from toolsense.generation.sampling import allocate, anchor_pools, stratified_sample
from toolsense.generation.topk import top_k_cosine

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "data" / "samples"
ANCHOR = "SkyCast Weather&&current_weather"
FULL = {"naturalness": 5, "tier_compliance": 5, "label_correctness": 5}


def _task(nb, tier="easy", anchor=ANCHOR) -> RRBTask:
    return RRBTask(f"rrb-{tier}-00000", tier, anchor, [anchor] + nb.nearest(anchor, 13))


def _make(task, demo_catalog, writer, judge=None, cfg=None, held_out=None):
    return make_rrb_item(task, demo_catalog, writer, judge, set(), cfg or GenerateConfig(), 0, held_out)


# ---------------------------------------------------------------- answer sets chosen by the writer
def test_answer_set_checks_pool_anchor_and_tier_size():
    pool = ["a", "b", "c", "d", "e"]
    assert check_answer_set([1], pool, "a", "easy") == (["a"], None)
    assert check_answer_set([1, 6], pool, "a", "medium") == (None, "answer set outside the pool: [6]")
    assert check_answer_set([0, 1], pool, "a", "medium") == (None, "answer set outside the pool: [0]")
    assert check_answer_set([2, 3], pool, "a", "medium") == (None, "answer set misses the anchor tool")
    assert check_answer_set([1, 2], pool, "a", "easy")[1] == "answer set of 2 does not fit tier easy (1-1)"
    assert check_answer_set([1, 2, 3, 4], pool, "a", "medium")[1] == "answer set of 4 does not fit tier medium (2-3)"
    assert check_answer_set([1, 2, 3], pool, "a", "hard")[1] == "answer set of 3 does not fit tier hard (4-more)"
    assert check_answer_set([1, 2, 3, 4, 5], pool, "a", "hard") == (pool, None)
    assert check_answer_set("1", pool, "a", "easy") == (None, "answer set is not a list of pool numbers")


def test_writer_reply_answer_set_through_make_rrb_item(demo_catalog, nb):
    task = _task(nb, "medium")
    me = task.pool.index(ANCHOR) + 1
    q = "What is it like outside right now in Oslo?"
    for tools, reason in (([me, 15], "answer set outside the pool: [15]"), ([2, 3], "answer set misses the anchor tool"),
                          ([me], "answer set of 1 does not fit tier medium (2-3)")):
        item, got, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[{"query": q, "tools": tools}]))
        assert item is None and got == reason
    writer = HandLLM(rrb_writer=[{"query": q, "tools": [me, 2]}])
    item, reason, _ = _make(task, demo_catalog, writer)
    assert reason is None and item["gold"] == [ANCHOR, task.pool[1]] and item["pool"] == task.pool
    prompt = writer.prompts["rrb_writer"][0]  # the writer saw the anchor, the whole pool (numbered) and the tier
    assert tool_card(demo_catalog[ANCHOR]) in prompt and f"14. {tool_card(demo_catalog[task.pool[13]])[2:]}" in prompt
    assert "2 or 3 tools" in prompt and GenerateConfig().few_shot.medium[0] in prompt  # tier and few-shot requests
    copy = GenerateConfig().few_shot.easy[0].upper() + "!"  # SmolLM2 through the local server did this
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[{"query": copy, "tools": [me, 2]}]))
    assert item is None and reason == "query copies a few-shot example"


# ---------------------------------------------------------------- leak check
def test_leak_check_word_boundary_accents_and_distinctive_names():
    customer = Tool.from_name("Customer&&get_orders", tool_title="Customer", api_title="get_orders")
    assert leaked_names("Look up the last orders of a customer", [customer]) == []  # old substring check: ['Customer']
    meteo = Tool.from_name("Météo Québec&&prévisions", tool_title="Météo Québec", api_title="Prévisions")
    assert leaked_names("what does meteo quebec say about tomorrow", [meteo]) == ["Météo Québec"]
    assert leaked_names("what does MÉTÉO-QUÉBEC say about tomorrow", [meteo]) == ["Météo Québec"]
    sky = Tool.from_name("SkyCast&&current", tool_title="SkyCast", api_title="current")
    assert leaked_names("skycasting tips for beginners please", [sky]) == []  # word boundary
    assert leaked_names("ask SkyCast about the rain", [sky]) == ["SkyCast"]
    scores = Tool.from_name("ScoreBoard Sports&&live_scores", tool_title="ScoreBoard Sports", api_title="live_scores")
    assert leaked_names("show live scores for tonight's games", [scores]) == []  # identifier ≠ its words
    assert leaked_names("call live_scores for tonight", [scores]) == ["live_scores"]
    jobs = Tool.from_name("Upwork Jobs API&&Job Search", tool_title="Upwork Jobs API", api_title="Job Search")
    assert leaked_names("help me with my job search", [jobs]) == []  # common words only: not a name
    assert leaked_names("search the Upwork Jobs API for gigs", [jobs]) == ["Upwork Jobs API"]


def _sample_rows(name):
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"{path} absent (released samples not available)")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _tool(d):
    return Tool.from_name(d["tool_name"], tool_title=d["tool_title"], tool_description=d["tool_description"],
                          api_title=d["api_title"], api_description=d["api_description"])


def test_released_sample_queries_pass_the_leak_check():
    rows = _sample_rows("rrb_sample.jsonl")
    leaks = [(r["query"], leaked_names(r["query"], [_tool(g) for g in (r["tool"] if isinstance(r["tool"], list) else [r["tool"]])]))
             for r in rows]
    assert len(rows) == 24 and [x for x in leaks if x[1]] == []  # the old check rejected "Which Guardian editions ..."


# ---------------------------------------------------------------- judge rubric and false-negative audit
def test_rubric_scores_saved_and_thresholds_applied(demo_catalog, nb):
    task = _task(nb)
    me = task.pool.index(ANCHOR) + 1
    write = {"query": "What is it like outside right now in Oslo?", "tools": [me]}
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[write]), HandLLM(rrb_judge=[{**FULL, "satisfying": [me]}]))
    assert reason is None and item["judge"]["scores"] == FULL
    assert item["judge"]["pool_verdicts"] == {p: p == ANCHOR for p in task.pool}
    low = {**FULL, "label_correctness": 3}
    item, reason, trace = _make(task, demo_catalog, HandLLM(rrb_writer=[write]), HandLLM(rrb_judge=[{**low, "satisfying": [me]}]))
    assert item is None and reason == "judge scores below rubric_min: ['label_correctness']"
    assert trace["judge"]["scores"] == low  # saved with the rejection too
    lenient = GenerateConfig(rubric_min={"label_correctness": 3})
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[write]), HandLLM(rrb_judge=[{**low, "satisfying": [me]}]), lenient)
    assert reason is None and item["judge"]["scores"]["label_correctness"] == 3
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[write]), HandLLM(rrb_judge=[{"naturalness": 5, "satisfying": [me]}]))
    assert reason == "judge reply lacks rubric scores (integers 1-5)"
    other = 1 if me != 1 else 2
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[write]), HandLLM(rrb_judge=[{**FULL, "satisfying": [other]}]))
    assert reason == "judge: the anchor does not fulfil the query"


def test_false_negative_audit_relabel_or_reject(demo_catalog, nb):
    task = _task(nb, "medium")
    me = task.pool.index(ANCHOR) + 1
    others = [i for i in range(1, 15) if i != me]
    write = {"query": "What is it like outside right now in Oslo?", "tools": [me, others[0]]}
    verdict = {**FULL, "satisfying": [me, others[0], others[1]]}  # one more pool tool fulfils it
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[write]), HandLLM(rrb_judge=[verdict]))
    assert reason is None
    assert item["gold"] == [ANCHOR, task.pool[others[0] - 1], task.pool[others[1] - 1]]
    assert item["judge"]["relabelled"] == [task.pool[others[1] - 1]]
    assert sum(item["judge"]["pool_verdicts"].values()) == 3
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[write]), HandLLM(rrb_judge=[verdict]),
                            GenerateConfig(fn_policy="reject"))
    assert item is None and reason == "judge found unlabelled positives in the pool (fn_policy=reject)"
    easy = _task(nb, "easy")
    me = easy.pool.index(ANCHOR) + 1
    item, reason, _ = _make(easy, demo_catalog, HandLLM(rrb_writer=[{**write, "tools": [me]}]),
                            HandLLM(rrb_judge=[{**FULL, "satisfying": [me, 1 if me != 1 else 2]}]))
    assert reason == "relabelled answer set of 2 does not fit tier easy"


# ---------------------------------------------------------------- clones
def _clone_catalog():
    desc = "Returns the latest observed weather conditions for a city"
    tools = [Tool.from_name("Weather Pro&&current", tool_title="Weather Pro", api_title="current", api_description=desc),
             Tool.from_name("WeatherPro&&current", tool_title="Weather Pro", api_title="Current", api_description=desc + "."),
             *[Tool.from_name(f"Svc{i}&&api{i}", tool_title=f"Svc{i}", api_title=f"api{i}", api_description=f"Does job {i} well")
               for i in range(6)]]
    emb = np.eye(8, dtype=np.float32)
    emb[1] = emb[0]  # the clone sits on the anchor
    for i in range(2, 8):
        emb[i] = emb[0] * (1 - 0.1 * i) + np.eye(8)[i] * 0.1 * i
    return Catalog(tools), emb / np.linalg.norm(emb, axis=1, keepdims=True)


def test_clones_kept_out_of_the_pool_or_added_to_gold():
    catalog, emb = _clone_catalog()
    (pool,), skipped = anchor_pools(catalog, emb, ["Weather Pro&&current"], 4, drop_clones=True)
    assert skipped == 1 and pool == ["Weather Pro&&current", "Svc0&&api0", "Svc1&&api1", "Svc2&&api2", "Svc3&&api3"]
    (pool,), skipped = anchor_pools(catalog, emb, ["Weather Pro&&current"], 4, drop_clones=False)
    assert skipped == 0 and pool[:2] == ["Weather Pro&&current", "WeatherPro&&current"]
    task = RRBTask("rrb-easy-00000", "easy", pool[0], pool)
    cfg = GenerateConfig(clones="gold")
    item, reason, _ = make_rrb_item(task, catalog, HandLLM(rrb_writer=[{"query": "how warm is it in Rome now", "tools": [1]}]),
                                    HandLLM(rrb_judge=[{**FULL, "satisfying": [1, 2]}]), set(), cfg, 0)
    assert reason is None and item["gold"] == ["Weather Pro&&current", "WeatherPro&&current"]
    assert item["clones_added"] == ["WeatherPro&&current"] and item["judge"]["relabelled"] == []


# ---------------------------------------------------------------- MCQ / QA
def test_question_dedupe_exact_and_near(nb):
    d = QuestionDeduper(minilm_encoder(), 0.9, ["Which city does this tool report the weather for?"])
    assert d.reason("which city does this tool report the weather for") == "duplicate question"
    assert d.reason("Which city does this tool report weather for?").startswith("near-duplicate question (cosine 0.9")
    assert d.reason("How many flights leave Paris each day?") is None
    d.add("How many flights leave Paris each day?")
    assert d.reason("How many flights leave Paris each day?") == "duplicate question"
    assert QuestionDeduper(None, 0.9, ["A b?"]).reason("a B") == "duplicate question"


def test_generic_questions_rejected(demo_catalog):
    tool = demo_catalog[ANCHOR]
    item = {"correct_answer": "Observed temperature, humidity and wind",
            "wrong_answers": ["A five-day forecast", "Pollen levels", "Sunrise times"]}
    assert check_mcq({**item, "question": "What is the primary function of this tool?"}, tool) == "generic question (template)"
    assert check_mcq({**item, "question": "Which invoice format does this tool export?"}, tool) == \
        "generic question (no content word from the tool card)"
    assert check_mcq({**item, "question": "Which location details does this tool need for observed conditions?"}, tool) is None
    assert check_qa({"question": "Does this tool work?", "answer": "Yes"}, tool, "Yes") == "generic question (template)"
    assert check_qa({"question": "Can this tool book hotel rooms?", "answer": "No"}, tool, "No") is None


class _FirstQAJudgeSaysNo(ScriptedLLM):
    """Answers "No" to the first QA question it judges: the first (Yes) item is rejected."""

    def __init__(self):
        super().__init__()
        self.qa_judged = 0

    def __call__(self, messages, **kw):
        if 'Reply as JSON: {"answer": "Yes"|"No"}' in messages[-1]["content"]:
            self.qa_judged += 1
            if self.qa_judged == 1:
                return json.dumps({"answer": "No"})
        return super().__call__(messages, **kw)


def test_qa_balance_over_accepted_items(tmp_path, demo_catalog, nb):
    cfg = GenerateConfig(tasks=["qa"], n_probes=4, max_attempts=1, output_dir=str(tmp_path))
    llm = _FirstQAJudgeSaysNo()
    summary = run(cfg, writer=llm, judge=llm, catalog=demo_catalog, embeddings=nb.emb)
    qa = [json.loads(line) for line in (tmp_path / "qa.jsonl").read_text().splitlines()]
    # the rejected first item was a Yes; the next target is Yes again (targets by index would give No, Yes, No)
    assert [q["answer"] for q in qa] == ["Yes", "No", "Yes"]
    assert summary["gen/qa/answer_yes"] == 2 and summary["gen/qa/answer_no"] == 1 and summary["gen/qa/rejected"] == 1


def test_card_without_description_skipped_and_service_description_used(tmp_path):
    tools = [Tool.from_name("Empty&&nothing", api_description="None"),
             Tool.from_name("Atlas&&lookup", tool_description="Finds the capital city of any country", api_description="None"),
             Tool.from_name("Quotes&&random_quote", api_description="Returns a random famous quote with its author"),
             Tool.from_name("Dice&&roll", api_description="Rolls any number of dice with a chosen number of sides"),
             Tool.from_name("Tides&&tide_times", api_description="Gives high and low tide times for a harbour")]
    catalog = Catalog(tools)
    assert tool_card(tools[1]).endswith(": Finds the capital city of any country")
    cfg = GenerateConfig(tasks=["mcq"], n_probes=5, output_dir=str(tmp_path), max_attempts=1)
    llm = ScriptedLLM()
    summary = run(cfg, writer=llm, judge=llm, catalog=catalog, embeddings=np.eye(5, dtype=np.float32))
    rejected = [json.loads(line) for line in (tmp_path / "rejected.jsonl").read_text().splitlines()]
    skipped = [r for r in rejected if r["reason"] == "card has no usable description"]
    assert len(skipped) == 1 and skipped[0]["final"] and summary["rejection_reasons"]["card has no usable description"] == 1
    assert summary["gen/mcq/accepted"] == 4 and llm.calls == 8  # a writer and a judge call per card, none for the skipped one


# ---------------------------------------------------------------- stratified anchors, top-k
def test_allocate_proportional_with_one_per_domain():
    rng = np.random.default_rng(0)
    sizes = {"A": 6, "B": 3, "C": 1}
    assert allocate(sizes, 5, rng) == {"A": 3, "B": 1, "C": 1}
    assert allocate(sizes, 4, rng) == {"A": 2, "B": 1, "C": 1}
    assert allocate(sizes, 7, rng) == {"A": 4, "B": 2, "C": 1}
    assert allocate({"A": 50, "B": 30, "C": 20}, 10, rng) == {"A": 5, "B": 3, "C": 2}
    assert allocate({"A": 97, "B": 1, "C": 1, "D": 1}, 8, rng) == {"A": 5, "B": 1, "C": 1, "D": 1}
    two = allocate(sizes, 2, rng)  # fewer items than domains: two domains, one item each
    assert sum(two.values()) == 2 and set(two.values()) == {1}
    assert allocate(sizes, 50, rng) == sizes  # capped at the catalog


def test_stratified_sample_on_a_constructed_catalog():
    tools = [Tool.from_name(f"{d}{i}&&api", category=d) for d, n in (("A", 12), ("B", 6), ("C", 2)) for i in range(n)]
    picks = stratified_sample(tools, 10, seed=3)
    assert picks == stratified_sample(tools, 10, seed=3) and len(set(picks)) == 10
    by = {t.name: t.category for t in tools}
    assert sorted(by[p] for p in picks) == ["A"] * 6 + ["B"] * 3 + ["C"]
    services = stratified_sample([Tool.from_name(f"S{i % 3}&&a{i}") for i in range(9)], 3, 0, key=lambda t: t.service)
    assert sorted(p.split("&&")[0] for p in services) == ["S0", "S1", "S2"]


def test_top_k_cosine_in_blocks_equals_full_sort():
    x = np.random.default_rng(0).normal(size=(50, 8)).astype(np.float32)
    idx, val = top_k_cosine(x[:7], x, 5, block=3)
    full = np.argsort(-(x[:7] @ x.T), axis=1)[:, :5]
    assert (idx == full).all() and np.allclose(val, np.take_along_axis(x[:7] @ x.T, full, axis=1))
    with pytest.raises(ValueError, match="k must be in 1..50"):
        top_k_cosine(x, x, 51)


# ---------------------------------------------------------------- leakage guard
def test_exclude_guard_keeps_benchmark_tools_out_of_training_data(tmp_path, demo_catalog, nb, caplog):
    held = [t.name for t in demo_catalog][::2]
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps({"query": f"benchmark query {i}", "tool": {"tool_name": n}}) + "\n" for i, n in enumerate(held)))
    with pytest.raises(ValueError, match=r"purpose=training: name the evaluation benchmarks to hold out in exclude"):
        GenerateConfig(purpose="training")
    guard = HeldOut.from_files([str(bench)])
    assert guard.tools == frozenset(held)
    tasks, _ = plan_rrb(demo_catalog, nb, {"easy": 6, "medium": 6, "hard": 6}, 13, 0, held_out=guard)
    assert len(tasks) == 18 and not {t.anchor for t in tasks} & set(held)
    task = _task(nb, "medium", tasks[0].anchor)
    me = task.pool.index(task.anchor) + 1
    bad = next(i + 1 for i, p in enumerate(task.pool) if p in guard.tools)
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[{"query": "a perfectly normal request", "tools": [me, bad]}]),
                            held_out=guard)
    assert reason == f"answer set holds tools of an excluded benchmark: {[task.pool[bad - 1]]}"
    ok = next(i + 1 for i, p in enumerate(task.pool) if p not in guard.tools and p != task.anchor)
    item, reason, _ = _make(task, demo_catalog, HandLLM(rrb_writer=[{"query": "Benchmark query 3", "tools": [me, ok]}]),
                            held_out=guard)
    assert reason == "query of an excluded benchmark"
    cfg = GenerateConfig(purpose="training", exclude=[str(bench)], rrb_per_tier={"easy": 4, "medium": 3, "hard": 2},
                         tasks=["rrb"], output_dir=str(tmp_path / "gen"))
    run(cfg, writer=ScriptedLLM(), judge=ScriptedLLM(), catalog=demo_catalog, embeddings=nb.emb)
    rows = [json.loads(line) for line in (tmp_path / "gen" / "rrb.jsonl").read_text().splitlines()]
    gold = {g["tool_name"] for r in rows for g in (r["tool"] if isinstance(r["tool"], list) else [r["tool"]])}
    assert len(rows) >= 5 and not gold & set(held)
    # Stage-2 reads it as training data (split=train); a benchmark-purpose generation is flagged there
    from toolsense.data.sources import QUERY_SOURCES, QuerySource

    caplog.clear()  # the generation's own INFO lines, captured where another test left the root logger at INFO
    with caplog.at_level("WARNING", logger="toolsense.data.sources"):
        assert len(QUERY_SOURCES.get("generated")(QuerySource(kind="generated", path=str(tmp_path / "gen" / "rrb.jsonl")))) == len(rows)
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        run(GenerateConfig(rrb_per_tier={"easy": 2}, tasks=["rrb"], output_dir=str(tmp_path / "bench_gen")),
            writer=ScriptedLLM(), judge=ScriptedLLM(), catalog=demo_catalog, embeddings=nb.emb)
        QUERY_SOURCES.get("generated")(QuerySource(kind="generated", path=str(tmp_path / "bench_gen" / "rrb.jsonl"), split=None))
    assert any("generated with purpose=benchmark: no leakage guard" in r.getMessage() for r in caplog.records)
