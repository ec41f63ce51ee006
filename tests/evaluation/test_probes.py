import json

import pytest
import torch

from toolsense.comparison.runs import item_values
from toolsense.evaluation import probes
from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
from toolsense.evaluation.config import ProbeConfig
from toolsense.evaluation.context import load_run
from toolsense.evaluation.probe_stats import (
    DEBIASED,
    balanced_correct,
    centred_predictions,
    distribution,
    majority_rate,
    rotation,
    top_answer,
)
from toolsense.evaluation.probes import evaluate_probe, permutation, probe_prompt, score_answers, summarize_probe
from toolsense.generation.probe_gen import make_probes
from toolsense.reporting.tables import flag_text, results_table


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
    assert ("<<SkyCast Weather&&current_weather>>" in tok_prompt
            and "SkyCast" not in tok_prompt.replace("<<SkyCast Weather&&current_weather>>", ""))
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


def _rows(preds, golds):
    return [{"pred": p, "gold": g, "correct": p == g, "scores": [0.0, 0.0]} for p, g in zip(preds, golds)]


def test_distributions_majority_chance_and_the_one_answer_flag():
    golds = list("AAABBBBCCD")
    res = summarize_probe(_rows(list("AAAAAAAAAB"), golds), "mcq", "ABCD", ProbeConfig(), resamples=50)
    assert res["answer_distribution"] == {"A": 9, "B": 1, "C": 0, "D": 0}
    assert res["gold_distribution"] == {"A": 3, "B": 4, "C": 2, "D": 1}
    assert res["majority_rate"] == 0.4 and res["chance"] == 0.25
    assert res["metrics"]["accuracy"]["value"] == pytest.approx(0.3)  # 3 golds at A; the one B is wrong
    assert res["top_answer"] == {"answer": "A", "share": 0.9, "flagged": False}  # the flag needs > 90%
    res = summarize_probe(_rows(list("AAAAAAAAAA"), golds), "mcq", "ABCD", ProbeConfig(), resamples=50)
    assert res["top_answer"] == {"answer": "A", "share": 1.0, "flagged": True}
    assert flag_text(res["top_answer"]) == "⚠ 100% 'A'"
    assert majority_rate(distribution(["Yes", "No", "No"], ["Yes", "No"])) == pytest.approx(2 / 3)
    assert top_answer({"Yes": 0, "No": 0}, 0.9) is None
    with pytest.raises(ValueError, match=r"answers \['E'\] are not among"):
        distribution(["E"], list("ABCD"))


def test_mean_centred_log_odds_turn_an_always_no_bias_into_balanced_answers():
    # log P(Yes), log P(No): No always wins, but Yes items have the higher log-odds
    logp = [[-3.0, -0.1], [-1.0, -0.1], [-2.5, -0.1], [-0.5, -0.1]]  # log-odds -2.9, -0.9, -2.4, -0.4
    preds, offset = centred_predictions(logp)
    assert offset == pytest.approx(-1.65) and preds == [1, 0, 1, 0]
    res = summarize_probe([{"pred": "No", "gold": g, "correct": g == "No", "scores": s}
                           for g, s in zip(["No", "Yes", "No", "Yes"], logp)], "qa", ["Yes", "No"],
                          ProbeConfig(debias="circular"), resamples=50)
    assert res["metrics"]["accuracy"]["value"] == 0.5 and res["top_answer"]["flagged"]
    assert res["metrics"]["calibrated_accuracy"]["value"] == 1.0
    assert res["debias"]["answer_distribution"] == {"Yes": 2, "No": 2} and not res["debias"]["top_answer"]["flagged"]
    plain = summarize_probe(_rows(["No"] * 2, ["No", "Yes"]), "qa", ["Yes", "No"], ProbeConfig(), resamples=50)
    assert "calibrated_accuracy" not in plain["metrics"] and plain["debias"] == {"method": "none"}


def test_rotation_moves_the_gold_through_every_slot():
    perm = [2, 0, 3, 1]  # gold (option 0) at slot B
    rots = [rotation(perm, r) for r in range(4)]
    assert rots == [[2, 0, 3, 1], [0, 3, 1, 2], [3, 1, 2, 0], [1, 2, 0, 3]]
    assert [r.index(0) for r in rots] == [1, 0, 3, 2]


def test_balanced_scoring_recovers_content_under_a_letter_prior():
    # slot prior 5, 3, 1, 0 plus 1.0 on the gold option: the model says "A" under every rotation
    # (gold in A: 6 > 3; gold elsewhere: at most 3 + 1 < 5), yet summed over rotations the gold
    # option collects the prior once per slot (9) plus 4 = 13 against 9 for every other option
    prior = [5.0, 3.0, 1.0, 0.0]
    rows = []
    for i, perm in enumerate([[0, 1, 2, 3], [2, 0, 3, 1], [3, 2, 1, 0]]):
        rots = []
        for r in range(4):
            p = rotation(perm, r)
            scores = [prior[j] + (1.0 if p[j] == 0 else 0.0) for j in range(4)]
            rots.append({"permutation": p, "gold": "ABCD"[p.index(0)], "pred": "A", "correct": p.index(0) == 0, "scores": scores})
        rows.append({**rots[0], "item_id": str(i), "rotations": rots})
    assert balanced_correct([r["rotations"] for r in rows], list("ABCD")) == [1.0, 1.0, 1.0]
    res = summarize_probe(rows, "mcq", list("ABCD"), ProbeConfig(debias="circular"), resamples=50)
    assert res["metrics"]["circular_mean"]["value"] == pytest.approx(0.25) and res["metrics"]["balanced_accuracy"]["value"] == 1.0
    wrong = [{**x, "scores": [prior[j] + (1.0 if x["permutation"][j] == 1 else 0.0) for j in range(4)]} for x in rows[0]["rotations"]]
    assert balanced_correct([wrong], list("ABCD")) == [0.0]  # the signal on another option: no credit


def _always(answer_index):
    def score(model, tokenizer, prompts, answers):
        out = torch.full((len(prompts), len(answers)), -5.0)
        out[:, answer_index] = -0.1
        return out
    return score


def test_circular_eval_of_a_model_that_always_answers_a(ev, tmp_path, monkeypatch):
    monkeypatch.setattr(probes, "score_answers", _always(0))
    mcq = load_benchmark(BenchmarkConfig(loader="mcq", limit=20))
    res = evaluate_probe(ev, mcq, "token", ProbeConfig(debias="circular", batch_size=8), tmp_path, resamples=50)
    rows = [json.loads(x) for x in (tmp_path / "samples.jsonl").read_text().splitlines()]
    at_a = sum(r["gold"] == "A" for r in rows)
    assert res["answer_distribution"] == {"A": 20, "B": 0, "C": 0, "D": 0} and res["top_answer"]["flagged"]
    assert res["metrics"]["accuracy"]["value"] == pytest.approx(at_a / 20) == res["gold_distribution"]["A"] / 20
    assert res["metrics"]["circular_mean"]["value"] == pytest.approx(0.25)
    assert res["metrics"]["circular_all"]["value"] == 0.0
    assert res["metrics"]["balanced_accuracy"]["value"] == pytest.approx(0.25)  # all four options tie: 1/4 credit each
    assert res["debias"] == {"method": "circular", "rotations": 4, "answer_distribution": {"A": 80, "B": 0, "C": 0, "D": 0}}
    for r in rows:
        assert [x["permutation"] for x in r["rotations"]] == [rotation(r["permutation"], k) for k in range(4)]
        assert sum(x["correct"] for x in r["rotations"]) == 1 and r["rotations"][0]["pred"] == r["pred"]
    # a run without rotations is completed, not trusted, when circular is switched on later
    monkeypatch.setattr(probes, "score_answers", _always(1))
    plain = evaluate_probe(ev, mcq, "control", ProbeConfig(), tmp_path / "ctl", resamples=50)
    assert "circular_mean" not in plain["metrics"] and plain["answer_distribution"]["B"] == 20
    again = evaluate_probe(ev, mcq, "control", ProbeConfig(debias="circular"), tmp_path / "ctl", resamples=50)
    assert again["metrics"]["circular_mean"]["value"] == pytest.approx(0.25) and again["debias"]["rotations"] == 4


def test_card_mode_shows_the_tool_description(ev):
    it = load_benchmark(BenchmarkConfig(loader="mcq")).items[0]
    card = probe_prompt(ev, it, "mcq", "card", [0, 1, 2, 3], ProbeConfig())
    desc = ev.catalog[it.tool].api_description
    service_desc = ev.catalog[it.tool].tool_description
    assert (f"Consider this tool: SkyCast Weather (API: current_weather). Service description: {service_desc} "
            f"API description: {desc}\n") in card
    assert "<<" not in card  # card mode names the tool by its text, never by its virtual token
    with pytest.raises(ValueError, match="probe.modes may only contain"):
        ProbeConfig(modes=["token", "tool"])
    with pytest.raises(ValueError, match="probe.flag_share"):
        ProbeConfig(flag_share=1.5)


@pytest.mark.parametrize("kind", ["mcq", "qa"])
def test_real_probe_path_in_every_mode_reports_consistent_diagnostics(ev, tmp_path, kind):
    bench = load_benchmark(BenchmarkConfig(loader=kind, limit=12))
    answers = "ABCD" if kind == "mcq" else ("Yes", "No")
    cfg = ProbeConfig(modes=["token", "control", "card", "options"], debias="circular", batch_size=8)
    for mode in cfg.modes:
        res = evaluate_probe(ev, bench, mode, cfg, tmp_path / mode, resamples=50)
        rows = [json.loads(x) for x in (tmp_path / mode / "samples.jsonl").read_text().splitlines()]
        assert res["mode"] == mode == res["system"] and res["n"] == 12 == len(rows)
        assert sum(res["answer_distribution"].values()) == 12 == sum(res["gold_distribution"].values())
        assert res["answer_distribution"] == {a: sum(r["pred"] == a for r in rows) for a in answers}
        assert res["majority_rate"] == max(res["gold_distribution"].values()) / 12
        assert res["chance"] == 1 / len(answers)
        assert res["top_answer"]["share"] == max(res["answer_distribution"].values()) / 12
        if kind == "mcq":
            per_item = [sum(x["correct"] for x in r["rotations"]) / 4 for r in rows]
            assert res["metrics"]["circular_mean"]["value"] == pytest.approx(sum(per_item) / 12)
            assert res["metrics"]["circular_all"]["value"] == pytest.approx(sum(p == 1 for p in per_item) / 12)
            assert sum(res["debias"]["answer_distribution"].values()) == 48
        else:
            preds, _ = centred_predictions([r["scores"] for r in rows])
            calib = sum(answers[p] == r["gold"] for p, r in zip(preds, rows)) / 12
            assert res["metrics"]["calibrated_accuracy"]["value"] == pytest.approx(calib)
        debiased = [key for key in DEBIASED if key in res["metrics"]]
        assert debiased == (["circular_mean", "circular_all", "balanced_accuracy"] if kind == "mcq" else ["calibrated_accuracy"])
        for key in debiased:  # item by item from samples.jsonl (seeds pooled, runs paired): the same accuracy
            per = item_values(tmp_path / mode / "results.json", key)
            assert sorted(per) == sorted(r["item_id"] for r in rows)
            assert sum(per.values()) / 12 == pytest.approx(res["metrics"][key]["value"])
    card = json.loads((tmp_path / "card" / "samples.jsonl").read_text().splitlines()[0])
    assert "API description: " in card["prompt"]


def test_table_and_comparison_show_probe_diagnostics_and_the_flag(tmp_path):
    from toolsense.comparison.compare import collect, comparison, comparison_table

    est = {"value": 0.224, "lo": 0.19, "hi": 0.26}
    probe = {"benchmark": "mcq", "system": "token", "kind": "mcq", "n": 496, "chance": 0.25, "majority_rate": 0.282,
             "top_answer": {"answer": "A", "share": 1.0, "flagged": True}, "missing": {"count": 0},
             "metrics": {"accuracy": est, "circular_mean": {"value": 0.25, "lo": 0.25, "hi": 0.25},
                         "circular_all": {"value": 0.0, "lo": 0.0, "hi": 0.0}},
             "source": {"model": "smollm2"}}
    table = results_table([probe], [1])
    assert table.splitlines()[0].endswith("| probe acc % | chance % | majority % | top answer | debiased acc % | missing tools |")
    assert ("| 22.4 [19.0, 26.0] ⚠ 100% 'A' | 25.0 | 28.2 | 100% 'A' | circ 25.0 [25.0, 25.0] / all 0.0 [0.0, 0.0] | 0 |"
            in table)
    (tmp_path / "mcq").mkdir()
    (tmp_path / "mcq" / "results.json").write_text(json.dumps(probe))
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["columns"] == ["mcq token acc", "mcq token circ", "mcq token circ-all"]
    assert comparison_table(comp).splitlines()[2] == \
        "| smollm2 | 22.4 [19.0, 26.0] (chance 25, maj. 28) ⚠ 100% 'A' | 25.0 [25.0, 25.0] | 0.0 [0.0, 0.0] |"


def test_demo_suite_probes_in_three_modes_and_debias_is_selectable():
    from toolsense.utils.compose import compose
    from toolsense.utils.config import to_config

    demo = compose("evaluate", overrides=["suite=demo"])
    circ = compose("evaluate", overrides=["suite=demo", "probe.debias=circular"])
    token = compose("evaluate", overrides=["probe=token"])
    assert to_config(ProbeConfig, demo.probe, "probe").modes == ["token", "control", "card"]
    assert demo.probe.debias == "none" and to_config(ProbeConfig, circ.probe, "probe").debias == "circular"
    assert token.probe.modes == ["token"] and token.probe.debias == "none"


@pytest.mark.slow
def test_untrained_smollm2_answers_a_to_every_demo_mcq_item_and_is_flagged(tmp_path, smollm2_dir):
    """The finding the diagnostics exist for: the untrained model's MCQ 'accuracy' is the share of
    golds shuffled to A; CircularEval exposes it (25%, 0%)."""
    from toolsense.catalog.config import CatalogConfig
    from toolsense.evaluation.context import load_untrained
    from toolsense.index.config import IndexConfig
    from toolsense.models import ModelConfig

    smol = load_untrained(ModelConfig("smollm2_135m"), CatalogConfig(), IndexConfig(), device="cpu")
    mcq = load_benchmark(BenchmarkConfig(loader="mcq", limit=8))
    res = evaluate_probe(smol, mcq, "token", ProbeConfig(debias="circular"), tmp_path, resamples=50)
    assert res["answer_distribution"] == {"A": 8, "B": 0, "C": 0, "D": 0} and res["top_answer"]["flagged"]
    assert res["metrics"]["accuracy"]["value"] == res["gold_distribution"]["A"] / 8
    assert res["metrics"]["circular_mean"]["value"] == 0.25 and res["metrics"]["circular_all"]["value"] == 0.0


def test_options_mode_names_no_tool_and_refuses_a_template_that_would_lose_the_question(ev):
    """``options``: the question and its options alone (the template's {tool} line left out), the
    floor a token score is compared with; a template whose {tool} line also holds the question is
    refused when that mode is asked for, and accepted otherwise."""
    it = load_benchmark(BenchmarkConfig(loader="mcq")).items[0]
    perm = [2, 0, 3, 1]
    opt = probe_prompt(ev, it, "mcq", "options", perm, ProbeConfig(), chat=False)[0]["content"]
    assert opt == (f"{it.question}\n" + "\n".join(f"{'ABCD'[j]}. {it.options[p]}" for j, p in enumerate(perm))
                   + "\nAnswer with A, B, C or D only.")
    assert "SkyCast" not in opt and "<<" not in opt and "Consider this tool" not in opt
    one_line = "About {tool}: {question}\n{options}\nAnswer with {choices} only."
    assert ProbeConfig(modes=["token"], template=one_line).template == one_line
    with pytest.raises(ValueError, match=r"probe mode 'options' drops the line holding \{tool\}, which also holds \{question\}"):
        ProbeConfig(modes=["token", "options"], template=one_line)


def test_probe_scores_come_from_fp32_logits_of_a_bf16_model():
    """A bf16 model's logits have 8 bits of mantissa: options within ~0.06 of each other at logit 10 round to one
    value, an exact tie that argmax gives to "A". The probes score from the head in fp32 instead."""
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    model, tok = load_model_and_tokenizer(ModelConfig("tiny_random", dtype="bfloat16"))
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(300)  # logits of a trained model's size (tens), bf16's spacing 0.06-0.5
    prompts = ["<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\nsay B<|im_end|>\n<|im_start|>assistant\n"]
    answers = ["A", "B", "C", "D"]
    got = score_answers(model.eval(), tok, prompts, answers)
    ids = [tok.encode(a, add_special_tokens=False)[0] for a in answers]
    for i, p in enumerate(prompts):
        inp = torch.tensor([tok.encode(p, add_special_tokens=False)])
        with torch.no_grad():
            hidden = model(input_ids=inp, output_hidden_states=True).hidden_states[-1][0, -1]
        want = torch.log_softmax(hidden.float() @ model.get_output_embeddings().weight[: len(tok)].float().T, -1)[ids]
        torch.testing.assert_close(got[i], want, rtol=0, atol=1e-4)
    assert "forward" not in model.get_output_embeddings().__dict__  # the head is restored


def test_a_tie_between_answers_is_flagged_and_counted_not_silently_an_a(ev, tmp_path, monkeypatch):
    assert probes.tied_answers(torch.tensor([-1.0, -1.0, -2.0]), ["A", "B", "C"]) == ["A", "B"]
    assert probes.tied_answers(torch.tensor([-1.0, -1.5, -1.0 - 1e-6]), ["A", "B", "C"]) == []

    def tied(model, tokenizer, prompts, answers):  # every other item: B and D share the top score
        out = torch.full((len(prompts), len(answers)), -3.0)
        out[::2, [1, 3]] = -0.5
        out[1::2, 2] = -0.5
        return out

    monkeypatch.setattr(probes, "score_answers", tied)
    mcq = load_benchmark(BenchmarkConfig(loader="mcq", limit=10))
    res = evaluate_probe(ev, mcq, "token", ProbeConfig(), tmp_path, resamples=50)
    rows = [json.loads(x) for x in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert res["ties"] == 5 == sum(r.get("tied") == ["B", "D"] for r in rows)
    assert all("tied" not in r for r in rows if r["pred"] == "C")
