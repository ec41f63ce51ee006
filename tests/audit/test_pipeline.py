"""End to end through the Hydra config: demo traces, PT2D, dilution and redaction scored by a
precomputed shortcut-reading scorer (the model-free stand-in for the fine-tuned LM)."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from toolsense.audit.config import audit_config
from toolsense.audit.generator import generate_traces
from toolsense.audit.redaction import RedactionConfig
from toolsense.audit.redaction_eval import redaction_variants, variant_messages
from toolsense.audit.run import run, sweep_metric
from toolsense.audit.scorers import messages_sha256

GEN = ["generator.n_fit=120", "generator.n_eval_per_cluster=24"]


def _shortcut_scores(cfg, path: Path):
    """Scores an agent that reads only the planted file name (the one upper-case identifier) would give, per prompt."""
    traces = generate_traces(cfg.generator)
    sets, _, rendered = redaction_variants(traces, cfg.redaction, cfg.prompt)
    rows = []
    for v, ts in sets.items():
        for rec in ts.records:
            msgs = variant_messages(v, rec, cfg.prompt, rendered)
            code = re.search(r"report_(KT|PL)-", msgs[-1]["content"])
            score = 0.5 if code is None else 0.9 if code.group(1) == "KT" else 0.1
            rows.append({"prompt_sha256": messages_sha256(msgs), "score": score})
    path.write_text("\n".join(json.dumps(r) for r in rows))


def test_demo_pipeline_with_precomputed_scorer(tmp_path, capsys, compose):
    scores = tmp_path / "scores.jsonl"
    base = ["audit/mode=demo", *GEN, "stats.n_boot=200", "dilution.ks=[0,2,10]", "dilution.seeds=[0,1]"]
    _shortcut_scores(audit_config(compose(base + [f"output_dir={tmp_path}/x", "audit/scorer=precomputed", "scorer.path=unused"])), scores)
    out = tmp_path / "run"
    cfg = compose(base + [f"output_dir={out}", "audit/scorer=precomputed", f"scorer.path={scores}"])
    metric = sweep_metric(run(audit_config(cfg)))
    res = json.loads((out / "results.json").read_text())
    printed = capsys.readouterr().out
    assert "Findings:" in printed and "redact identifier: AUROC 0.500" in printed and "control intact" in printed
    for name in ("report.md", "pt2d.png", "dilution.png", "redaction.png", "samples.jsonl", "traces.jsonl", "pt2d.jsonl"):
        assert (out / name).stat().st_size > 0, name
    red = res["redaction"]["variants"]
    assert res["redaction"]["n_scored"] == 120 and res["data"]["n_fit"] == 120
    assert red["original"]["auroc"]["all"]["auroc"] > 0.8
    assert red["identifier"]["auroc"]["all"]["auroc"] == 0.5 and red["identifier"]["delta_A"]["lo"] > 0.25
    assert red["time"]["control"] and red["time"]["delta_A"]["auroc"] == 0.0
    assert red["project"]["delta_A"]["auroc"] == 0.0
    assert metric == pytest.approx(red["identifier"]["delta_A"]["auroc"])
    n = res["data"]["n_records"]
    assert red["identifier"]["replacements"]["replacements"] == 5 * n
    assert red["identifier"]["replacements"]["scored_records_touched"] == 120
    assert red["time"]["replacements"]["by_field"] == {"fetch_logs": n, "query_db": n, "run_tests": n}
    assert set(red["identifier"]["auroc"]) == {"all", "1", "2", "3", "4", "5"}
    for part, d in red["identifier"]["delta_A_by_partition"].items():
        assert d["auroc"] > 0.2 and d["lo"] <= d["auroc"] <= d["hi"] and d["n"] == 24, part
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 5 * 120 and all(s["parsed"] for s in samples)
    # the format class reaches the section headers the template writes: 5 per record, none in a field
    assert red["format"]["scope"] == "rendered" and red["format"]["replacements"]["by_field"] == {"rendered": 5 * n}
    assert red["format"]["delta_A"]["auroc"] == 0.0  # this scorer reads the file name, not the headers
    assert all("[list_files]" not in s["prompt"] and "\n- src/" in s["prompt"] for s in samples if s["variant"] == "format")
    assert all("[list_files] src/" in s["prompt"] for s in samples if s["variant"] != "format")
    assert all("[ID]" in s["prompt"] and "KT-" not in s["prompt"] for s in samples if s["variant"] == "identifier")
    pt = {(r["view"], r["features"]): r["auroc"]["all"]["auroc"] for r in res["pt2d"]["rows"]}
    assert pt[("full", "char_3_5")] < 0.62 < 0.85 < pt[("list_files", "char_3_5")]
    report = (out / "report.md").read_text()
    assert "## Stage 2 - token-class redaction" in report and "time (control)" in report
    # results, report and plots published as one set (utils/publish.py), with the samples they were computed from
    published = json.loads((out / "manifest.json").read_text())["files"]
    assert set(published) == {"results.json", "report.md", "pt2d.png", "dilution.png", "redaction.png", "samples.jsonl",
                              "pt2d.jsonl", "dilution.jsonl"}
    assert all(hashlib.sha256((out / name).read_bytes()).hexdigest() == f["sha256"] for name, f in published.items())
    # the report names the protocol: append order, pool rule, length matching, format class, dA's sign
    dil = res["dilution"]
    assert dil["order"] == ["list_files", "search_docs", "run_tests", "query_db", "fetch_logs"]
    assert dil["real_order"]["setting"] == "auto" and dil["synthetic_pool"]["setting"] == "non_leaky"
    assert dil["length_match"] == {"setting": "probe", "unit": "characters", "rule": dil["length_match"]["rule"],
                                   "mean_target_chars": dil["length_match"]["mean_target_chars"]}
    assert "list_files" not in dil["synthetic_pool"]["tools"] and dil["length_match"]["mean_target_chars"] > 20
    assert res["redaction"]["delta_A_definition"].startswith("delta_A = A_original - A_redacted")
    for text in ("Real append order (`dilution.real_order=auto`: the probe tool, then the other tools in trace order",
                 "list_files -> search_docs -> run_tests -> query_db -> fetch_logs",
                 "Synthetic pool (`dilution.synthetic_pool=non_leaky`: tools other than the probe whose own eval AUROC",
                 "Length matching (`dilution.length_match=probe`, in characters)", "| format | rendered |",
                 "ΔA = A_original − A_redacted, the paper's sign"):
        assert text in report, text
    # rerun in the same folder: every stage resumes from its files
    assert sweep_metric(run(audit_config(cfg))) == pytest.approx(metric)


@pytest.mark.parametrize("overrides, message", [
    (["data.path=null"], "data.path is required (or run the demo: python audit.py audit/mode=demo)"),
    (["audit/mode=demo", "+data.nope=1"], "data: unknown field(s) ['nope']"),
    (["audit/mode=demo", "pt2d.features=[word_9]"], "pt2d: unknown PT2D feature set 'word_9'; choose from"),
    (["audit/mode=demo", "generator.strength=2"], "generator.strength must be in [0, 1], got 2"),
    (["audit/mode=demo", "audit/scorer=openai"], "scorer.kind=openai needs scorer.base_url and scorer.model"),
])
def test_config_errors_name_the_field(overrides, message, compose):
    with pytest.raises(ValueError) as e:
        audit_config(compose(["output_dir=/tmp/unused"] + overrides))
    assert message in str(e.value)


def test_every_redaction_preset_builds(compose):
    for name in ("demo", "generic"):
        cfg = audit_config(compose(["audit/mode=demo", "output_dir=/tmp/unused", f"audit/redaction={name}"]))
        assert isinstance(cfg.redaction, RedactionConfig) and cfg.redaction.classes
    assert audit_config(compose(["audit/mode=demo", "output_dir=/tmp/unused"])).finetune.enabled is True
    assert audit_config(compose(["data.path=x.jsonl", "output_dir=/tmp/unused"])).finetune.enabled is False
