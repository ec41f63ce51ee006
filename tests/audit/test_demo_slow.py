"""The real demo: LoRA-fine-tuned SmolLM2 scores the traces; minutes on CPU, so marked slow."""

import json

import pytest

from toolsense.audit.config import audit_config
from toolsense.audit.run import run


@pytest.mark.slow
def test_demo_finetuned_smollm2_depends_on_the_planted_identifier(tmp_path, smollm2_dir, compose):
    run(audit_config(compose(["audit/mode=demo", f"output_dir={tmp_path}"])))
    res = json.loads((tmp_path / "results.json").read_text())
    var = res["redaction"]["variants"]
    assert var["original"]["auroc"]["all"]["auroc"] > 0.75
    assert var["original"]["unparseable"] <= 0.05 * res["redaction"]["n_scored"]
    assert var["identifier"]["delta_A"]["lo"] > 0 and abs(var["identifier"]["auroc"]["all"]["auroc"] - 0.5) < 0.12
    assert abs(var["time"]["delta_A"]["auroc"]) < 0.05
    for name in ("report.md", "pt2d.png", "dilution.png", "redaction.png"):
        assert (tmp_path / name).exists()
