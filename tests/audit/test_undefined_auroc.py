"""An AUROC over records of one class is undefined: results.json, pt2d.jsonl and dilution.jsonl
stay valid JSON (null, with ``"undefined": "one class"``), never ``NaN`` (issue 38)."""

import json

from toolsense.audit.config import audit_config
from toolsense.audit.generator import GeneratorConfig, write_demo_traces
from toolsense.audit.run import run


def _strict(text: str):
    """json.loads that refuses NaN / Infinity, as every JSON parser but Python's does."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def test_one_class_partition_is_null_with_its_reason_in_every_file(tmp_path, compose):
    traces = tmp_path / "traces.jsonl"
    write_demo_traces(GeneratorConfig(n_fit=60, n_eval_per_cluster=12, n_eval_clusters=2, seed=0), traces)
    rows = [json.loads(line) for line in traces.read_text().splitlines()]
    eval_parts = sorted({r["cluster"] for r in rows} - {min(r["cluster"] for r in rows)}, key=str)
    one_class = eval_parts[-1]
    for r in rows:
        if r["cluster"] == one_class:
            r["label"] = 0  # this eval partition now holds one class: its AUROC is undefined
    traces.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    cfg = audit_config(compose([f"output_dir={out}", f"data.path={traces}", "redaction.enabled=false", "stats.n_boot=50",
                                "dilution.ks=[0,2]", "dilution.seeds=[0,1]",
                                "pt2d.features=[word_1_2]", "dilution.features=word_1_2"]))
    res = run(cfg)
    saved = _strict((out / "results.json").read_text())
    pt2d = [_strict(line) for line in (out / "pt2d.jsonl").read_text().splitlines()]
    dilution = [_strict(line) for line in (out / "dilution.jsonl").read_text().splitlines()]
    part = saved["pt2d"]["rows"][0]["auroc"][str(one_class)]
    assert part == {"auroc": None, "lo": None, "hi": None, "n": 12, "undefined": "one class"}
    assert all(r["auroc"][str(one_class)]["undefined"] == "one class" for r in pt2d)
    assert all(r["auroc"]["all"]["auroc"] is not None for r in pt2d)  # the other partition keeps both classes
    synthetic = [r for r in dilution if r["sweep"] == "synthetic"]  # scored without a bootstrap: no interval
    assert synthetic and all(r["lo"] is None and r["undefined"].startswith("interval: no bootstrap") for r in synthetic)
    assert res["pt2d"]["rows"][0]["auroc"][str(one_class)]["auroc"] is None
    report = (out / "report.md").read_text()
    assert "| n/a |" in report and "nan" not in report  # the table says n/a where the AUROC is undefined
