import json

import pytest
import torch

from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
from toolsense.evaluation.config import ProbeConfig
from toolsense.evaluation.context import load_run
from toolsense.generation.probe_gen import make_probes
from toolsense.evaluation.probes import evaluate_probe, permutation, probe_prompt, score_answers


@pytest.fixture(scope="module")
def ev(tiny_run):
    return load_run(tiny_run, "stage2", device="cpu")


def test_permutation_is_seeded_and_qa_is_not_shuffled(ev):
    mcq = load_benchmark(BenchmarkConfig(loader="mcq"))
    perms = [permutation(it, "mcq", 0) for it in mcq.items]
    assert perms == [permutation(it, "mcq", 0) for it in mcq.items]
    assert perms != [permutation(it, "mcq", 1) for it in mcq.items]
    assert all(sorted(p) == [0, 1, 2, 3] for p in perms)
    assert len({tuple(p) for p in perms}) > 10  # correct answer is not always in the same slot
    qa = load_benchmark(BenchmarkConfig(loader="qa"))
    assert permutation(qa.items[0], "qa", 0) == [0, 1]


def test_prompt_names_tool_by_token_or_in_control_by_name(ev):
    it = load_benchmark(BenchmarkConfig(loader="mcq")).items[0]
    perm = [2, 0, 3, 1]
    tok_prompt = probe_prompt(ev, it, "mcq", "token", perm, ProbeConfig())
    ctl_prompt = probe_prompt(ev, it, "mcq", "control", perm, ProbeConfig())
    assert "<<SkyCast Weather&&current_weather>>" in tok_prompt and "SkyCast" not in tok_prompt.replace("<<SkyCast Weather&&current_weather>>", "")
    assert "SkyCast Weather (API: current_weather)" in ctl_prompt and "<<" not in ctl_prompt
    assert f"B. {it.options[0]}" in tok_prompt  # the correct option (index 0) sits at slot B under this permutation
    assert "Answer with A, B, C or D only." in tok_prompt


def test_single_token_scoring_equals_teacher_forcing(ev):
    prompts = ["<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\nsay B<|im_end|>\n<|im_start|>assistant\n"]
    fast = score_answers(ev.model, ev.tokenizer, prompts, ["A", "B", "C", "D"])
    # a multi-token answer list forces the teacher-forced path; its first column must agree
    slow = score_answers(ev.model, ev.tokenizer, prompts, ["A", "B", "C", "D", "A B"])
    assert torch.allclose(fast, slow[:, :4], atol=1e-4)
    assert (fast <= 0).all()


def test_probe_accuracy_matches_samples_and_missing_tools_are_reported(ev, tmp_path, shared_data):
    mcq = load_benchmark(BenchmarkConfig(loader="mcq", limit=24))
    res = evaluate_probe(ev, mcq, "token", ProbeConfig(batch_size=7), tmp_path / "mcq", resamples=200)
    rows = [json.loads(x) for x in (tmp_path / "mcq" / "samples.jsonl").read_text().splitlines()]
    assert res["n"] == 24 == len(rows) and res["chance"] == 0.25
    assert res["metrics"]["accuracy"]["value"] == pytest.approx(sum(r["correct"] for r in rows) / 24)
    for r in rows:
        assert r["gold"] == "ABCD"[r["permutation"].index(0)]
        assert r["correct"] == (r["pred"] == r["gold"]) and len(r["scores"]) == 4
    # the released sample's tools are not in the demo index: every item reported, none scored
    released = load_benchmark(BenchmarkConfig(loader="qa", path=str(shared_data / "samples" / "qa_sample.jsonl")))
    res = evaluate_probe(ev, released, "token", ProbeConfig(), tmp_path / "qa")
    assert res["n"] == 0 and res["missing"]["items_skipped"] == 20 and res["missing"]["count"] == 20
    assert "Twitter Avatar API&&Get Twitter Avatar" in res["missing"]["names"]


def test_demo_probe_files_are_reproducible_and_well_formed(demo_catalog):
    from toolsense.catalog.loaders import DEMO_DIR

    mcq, qa = make_probes(demo_catalog)
    assert [json.loads(x) for x in (DEMO_DIR / "probes_mcq.jsonl").read_text().splitlines()] == mcq
    assert [json.loads(x) for x in (DEMO_DIR / "probes_qa.jsonl").read_text().splitlines()] == qa
    assert len(mcq) == len(qa) == len(demo_catalog)
    assert all(m["correct_answer"] not in m["wrong_answers"] and len(set(m["wrong_answers"])) == 3 for m in mcq)
    assert sum(q["answer"] == "Yes" for q in qa) == (len(qa) + 1) // 2
