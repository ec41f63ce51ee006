import pytest

from toolsense.audit.redaction import RedactionConfig, TokenClassConfig, redact
from toolsense.audit.traces import ToolResult, TraceRecord, TraceSet


def _set():
    recs = [
        TraceRecord("a", 1, "0", (ToolResult("files", "report_KT-12.csv and KT-99"), ToolResult("db", "owner atlas at 10:15")),
                    {"question": "Will atlas pass?"}, {"project": "atlas"}),
        TraceRecord("b", 0, "1", (ToolResult("files", "report_PL-30.csv"), ToolResult("db", "atlas-x cedar")),
                    {"question": "Will cedar pass at 09:00?"}, {"project": ["cedar"]}),
    ]
    return TraceSet(recs, ["files", "db"], "mem")


def test_regex_class_replaces_globally_and_counts():
    red, counts = redact(_set(), TokenClassConfig(name="identifier", patterns=[r"(?<![A-Za-z])[A-Z]{2}-\d{2}\b"], placeholder="[ID]"))
    assert red.records[0].results[0].text == "report_[ID].csv and [ID]"
    assert red.records[1].results[0].text == "report_[ID].csv"
    assert counts["replacements"] == 3 and counts["per_record"] == [2, 1]
    assert counts["by_field"] == {"files": 3} and counts["records_touched"] == 2


def test_value_field_class_reaches_every_prompt_field():
    cls = TokenClassConfig(name="project", value_fields=["project"])
    red, counts = redact(_set(), cls)
    a, b = red.records
    assert a.fields["question"] == "Will [PROJECT] pass?"
    assert a.results[1].text == "owner [PROJECT] at 10:15"
    # whole-word literals: "atlas-x" is hyphen-separated, so it still matches; "cedar" in record b too
    assert b.results[1].text == "[PROJECT]-x [PROJECT]" and b.fields["question"] == "Will [PROJECT] pass at 09:00?"
    assert counts["replacements"] == 5 and counts["by_field"] == {"db": 3, "question": 2}
    # the original is untouched
    assert _set().records[0].fields["question"] == "Will atlas pass?"


def test_literal_values_longest_first_and_control_flag():
    cls = TokenClassConfig(name="t", values=["at", "atlas"], whole_word=False, control=True)
    red, counts = redact(_set(), cls)
    assert red.records[0].results[1].text == "owner [T] [T] 10:15"
    assert cls.control and counts["replacements"] == 5  # atlas, at, atlas (question); atlas, at (question b)


@pytest.mark.parametrize("kwargs, message", [
    (dict(name=""), "every token class needs a name"),
    (dict(name="x"), "redaction.classes[x]: give patterns, values or value_fields"),
    (dict(name="x", patterns=["(unclosed"]), "redaction.classes[x].patterns: '(unclosed' is not a valid regex"),
])
def test_class_config_errors(kwargs, message):
    with pytest.raises(ValueError) as e:
        TokenClassConfig(**kwargs)
    assert message in str(e.value)


def test_config_level_errors():
    with pytest.raises(ValueError, match=r"redaction.classes\[x\].value_fields: field 'nope' is in no record of mem"):
        redact(_set(), TokenClassConfig(name="x", value_fields=["nope"]))
    with pytest.raises(ValueError, match=r"duplicate class name\(s\) \['a'\]"):
        RedactionConfig(classes=[TokenClassConfig(name="a", values=["1"]), TokenClassConfig(name="a", values=["2"])])
    with pytest.raises(ValueError, match="'original' is reserved"):
        RedactionConfig(classes=[TokenClassConfig(name="original", values=["1"])])


def test_demo_classes_count_exactly(demo_traces):
    """Every demo record has 5 identifiers (1 planted + 4 noise), its project 3 times, 3 times of
    day, and 5 rendered section headers."""
    from pathlib import Path

    from omegaconf import OmegaConf

    from toolsense.utils.config import to_config

    demo = Path(__file__).parents[2] / "toolsense/conf/audit/redaction/demo.yaml"
    conf = OmegaConf.to_container(OmegaConf.load(demo))
    cfg = to_config(RedactionConfig, conf, "redaction")
    from toolsense.audit.prompting import AuditPromptConfig
    from toolsense.audit.redaction_eval import redaction_variants

    n = len(demo_traces)
    expected = {"identifier": 5 * n, "project": 3 * n, "time": 3 * n, "format": 5 * n}  # format: one header per tool
    _, all_counts, rendered = redaction_variants(demo_traces, cfg, AuditPromptConfig())
    assert sorted(all_counts) == sorted(expected) and list(rendered) == ["format"]
    for name, counts in all_counts.items():
        assert counts["replacements"] == expected[name], name
        assert counts["records_touched"] == n
    red, _ = redact(demo_traces, cfg.classes[0])
    assert all("KT-" not in r.section(t) and "PL-" not in r.section(t) for r in red.records for t in red.tools)


def test_delta_A_has_the_papers_sign():
    """Constructed: the original scores rank the 4 records perfectly (A_orig = 1); the redacted
    scores rank them backwards (A_redacted = 0). The paper's dA = A_original - A_redacted = +1."""
    from types import SimpleNamespace

    import numpy as np

    from toolsense.audit.redaction_eval import auroc_deltas
    from toolsense.audit.report import findings

    recs = [TraceRecord(str(i), y, "1", (ToolResult("t", "x"),)) for i, y in enumerate([0, 0, 1, 1])]
    traces = TraceSet(recs, ["t"])
    cfg = RedactionConfig(classes=[TokenClassConfig(name="id", values=["x"])])
    scores = {"original": np.array([0.1, 0.2, 0.8, 0.9]), "id": np.array([0.9, 0.8, 0.2, 0.1])}
    counts = {"id": {"replacements": 4, "per_record": [1, 1, 1, 1]}}
    out = auroc_deltas(traces, [0, 1, 2, 3], scores, counts, {}, cfg, SimpleNamespace(n_boot=50, level=0.95, seed=0))
    assert out["id"]["auroc"]["all"]["auroc"] == 0.0 and out["original"]["auroc"]["all"]["auroc"] == 1.0
    assert out["id"]["delta_A"]["auroc"] == 1.0 and out["id"]["delta_A_by_partition"]["1"]["auroc"] == 1.0
    res = {"redaction": {"variants": out, "n_scored": 4, "decoding": {}}}
    assert "dA = A_orig - A_redacted = +1.000" in findings(res)[1]


def test_format_class_redacts_rendered_headers_the_field_classes_cannot_reach():
    """The "[files] " / "[db] " headers exist only after prompt.section_template renders the
    trace: the rendered-scope format class replaces both per record (4 in all); the same
    pattern over fields finds nothing, and the field classes leave every header in place."""
    from toolsense.audit.prompting import AuditPromptConfig
    from toolsense.audit.redaction_eval import redaction_variants, variant_messages

    fmt = dict(name="format", patterns=[r"(?m:^)\[[A-Za-z_][\w.-]*\] "], placeholder="- ")
    cfg = RedactionConfig(classes=[TokenClassConfig(**fmt, scope="rendered"),
                                   TokenClassConfig(name="identifier", patterns=[r"[A-Z]{2}-\d{2}"]),
                                   TokenClassConfig(name="project", value_fields=["project"])])
    prompt = AuditPromptConfig()
    sets, counts, rendered = redaction_variants(_set(), cfg, prompt)
    assert counts["format"]["replacements"] == 4 and counts["format"]["by_field"] == {"rendered": 4}
    user = variant_messages("format", sets["format"].records[0], prompt, rendered)[-1]["content"]
    assert user == ("Will atlas pass?\n- report_KT-12.csv and KT-99\n- owner atlas at 10:15\n"
                    "Reply <answer>N</answer> with N from 1 to 10.")
    for v in ("original", "identifier", "project"):
        text = variant_messages(v, sets[v].records[0], prompt, rendered)[-1]["content"]
        assert "\n[files] " in text and "\n[db] " in text, v
    assert redact(_set(), TokenClassConfig(**fmt))[1]["replacements"] == 0  # scope=fields: no header in any field
    with pytest.raises(ValueError, match=r"redaction.classes\[f\].scope must be fields or rendered"):
        TokenClassConfig(name="f", patterns=["x"], scope="prompt")


def test_no_verdict_where_no_answer_could_be_read_as_a_score():
    """Issue 49: a folder whose scores were all null (every answer scored unparseable_score) still
    got "no significant change": a constant against a constant is no evidence either way."""
    from toolsense.audit.report import findings

    auroc = {"auroc": 0.5, "lo": 0.5, "hi": 0.5}
    row = {"auroc": {"all": auroc}, "control": False, "delta_A": {"auroc": 0.0, "lo": 0.0, "hi": 0.0},
           "replacements": {"replacements": 7}}
    res = {"redaction": {"n_scored": 40, "decoding": {"method": "generate"},
                         "variants": {"original": {"auroc": {"all": auroc}, "unparseable": 40}, "tools": {**row, "unparseable": 40}}}}
    lines = findings(res)
    assert lines[-1].endswith("-> no verdict: no answer of original or tools could be read as a score")
    res["redaction"]["variants"]["original"]["unparseable"] = res["redaction"]["variants"]["tools"]["unparseable"] = 3
    assert findings(res)[-1].endswith("7 replacements -> no significant change")
