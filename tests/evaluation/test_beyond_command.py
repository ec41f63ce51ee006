"""`make beyond`, the one command that compares ToolGen-style tokens, the toolken head, both
hybrids, BM25 and dense on the demo and the released RRB part: every python line of the target
composes and converts to its entry script's typed config, and the suites hold those systems,
per-tier benchmarks and a label that says the RRB file is the released part."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def beyond_lines() -> list[list[str]]:
    """The target's python command lines, make variables filled with their defaults as on a fresh
    machine (no finished study run: the RRB token row falls back to the untrained model)."""
    text = (ROOT / "Makefile").read_text()
    defaults = dict(re.findall(r"^(\w+)\s*\?=\s*(.+)$", text, re.M))
    assert "$(wildcard $(STUDY_TG)/done.json),run=$(STUDY_TG)" in defaults["RRB_MODEL"]  # the study's TG run when it exists
    defaults["RRB_MODEL"] = defaults["RRB_FALLBACK"]
    defaults["RRB_OUT"] = "$(BEYOND)/rrb_untrained"
    for _ in range(2):  # variables naming variables
        defaults = {k: re.sub(r"\$\((\w+)\)", lambda m: defaults.get(m.group(1), m.group(0)), v) for k, v in defaults.items()}
    body = re.search(r"^beyond:.*\n((?:\t.*\n)+)", text, re.M).group(1)
    out = []
    for line in body.splitlines():
        line = re.sub(r"\$\((\w+)\)", lambda m: defaults.get(m.group(1), "python" if m.group(1) == "PY" else m.group(0)), line)
        words = shlex.split(line)
        script = next(i for i, w in enumerate(words) if w.endswith(".py"))
        out.append(words[script:])
    return out


def _compose(script: str, overrides: list[str]):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from toolsense.utils.compose import conf_dir
    from toolsense.utils.config import to_config

    if script == "train.py":
        from toolsense.training import TrainConfig as schema
        from toolsense.training import register_configs
    elif script == "compare.py":
        from toolsense.comparison.compare import CompareConfig as schema
        from toolsense.comparison.compare import register_configs
    else:
        from toolsense.evaluation.config import EvaluateConfig as schema
        from toolsense.evaluation.config import register_configs
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            return to_config(schema, compose(script[:-3], overrides=overrides))
    finally:
        GlobalHydra.instance().clear()


def test_make_beyond_composes_every_step():
    lines = beyond_lines()
    assert [w[0] for w in lines] == ["train.py", "train.py", "evaluate.py", "train.py", "evaluate.py", "compare.py"]
    typed = [_compose(w[0], w[1:]) for w in lines]
    demo_run, toolken_demo, demo_eval, toolken_rrb, rrb_eval, comp = typed
    assert demo_run.head.kind == "tokens" and toolken_demo.head.kind == "toolken" and not toolken_demo.stage1.enabled
    assert toolken_rrb.catalog.path.endswith("catalogs/study_tools.jsonl") and toolken_rrb.stage2.sources[0].kind == "verbose"
    assert rrb_eval.catalog.path == toolken_rrb.catalog.path  # every RRB row ranks the same 1,000 tools
    systems = ["restricted_bm25", "restricted_dense", "rrf_bm25", "rrf_dense", "toolken"]
    for ev, bench in ((demo_eval, "realistic"), (rrb_eval, "rrb_released_part")):
        assert sorted(ev.system_sections()) == systems and sorted(ev.baseline_sections()) == ["bm25", "dense"]
        assert list(ev.benchmark_sections()) == [bench] and ev.parametric
        assert ev.system_sections()["toolken"].run.endswith("toolken_demo" if bench == "realistic" else "toolken_study_tools")
    assert demo_eval.run == "outputs/demo" and rrb_eval.model.name_or_path == "smollm2_135m" and rrb_eval.run is None
    assert rrb_eval.benchmark_sections()["rrb_released_part"].path.endswith("released/rrb_dev.jsonl")
    assert comp.roots == ["outputs/beyond/demo", "outputs/beyond/rrb_untrained"] and "COMPc@5" in comp.metrics


def test_beyond_suite_needs_the_toolken_run():
    with pytest.raises(Exception, match="system.run"):
        _compose("evaluate.py", ["suite=beyond"])
