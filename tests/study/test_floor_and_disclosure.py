"""#47 items 4 and 5: the retrieval floor makes every finding that compares arms untestable when an arm does not
retrieve (the verdict without the rule kept beside), and every study report discloses the code changes made after
its first result and the interval method as implemented, with its deviation from the registered text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from toolsense.comparison.seed_stats import INTERVAL_METHOD
from toolsense.reporting.disclosure import disclosure_section
from toolsense.study.findings import finding, judged, registered
from toolsense.study.sweep import Settings, Sweep

S = Settings(k=5, resamples=200, min_seeds=1, retrieval_floor=0.10)


def _grid(hier_rc: float) -> Sweep:
    """Two flat and two hierarchical configurations (IS apart, drift apart); the hierarchical ones at ``hier_rc``."""
    cells, schemes = {}, {}
    rows = [("tg-lora", "flat", 0.8, 0.9, 0.3), ("tg_3fm-full", "flat", 0.7, 0.9, 0.4),
            ("tg_h-lora", "hierarchical", 0.3, hier_rc, 0.02), ("tg_5fm-full", "hierarchical", 0.5, hier_rc, 0.03)]
    for row, scheme, is_, rc, dr in rows:
        cells[row] = {"realistic IS@5": {"value": is_}, "standard Rc@5": {"value": rc},
                      "drift stage1->stage2 virtual": {"value": dr}}
        schemes[row] = scheme
    sw = Sweep.__new__(Sweep)
    sw.name, sw.path = "grid", Path(".")
    sw.comp = {"rows": list(cells), "cells": cells, "baselines": [], "schemes": schemes, "sources": {}}
    return sw


def test_an_arm_below_the_floor_makes_a_comparing_finding_untestable_naming_it():
    spec = finding(3)
    above = judged(spec, {"grid": _grid(0.5)}, S)
    assert above.verdict == "yes" and "floor_rule" not in above.details
    below = judged(spec, {"grid": _grid(0.057)}, S)
    assert below.verdict == "untestable"
    assert below.details["floor_rule"] == {"below": ["tg_h-lora", "tg_5fm-full"], "verdict_without": "yes",
                                          "why_without": above.why}
    assert below.why.startswith("arms tg_h-lora, tg_5fm-full do not retrieve (standard Rc@5 tg_h-lora 5.7%")
    assert "without the floor rule this finding reads yes" in below.why
    # no floor (0), or the finding pools configurations instead of comparing arms: unchanged
    assert judged(spec, {"grid": _grid(0.057)}, replace(S, retrieval_floor=0.0)).verdict == "yes"
    assert {s.number for s in registered() if s.compares} == {3, 5, 6, 7}


def test_the_disclosure_lists_each_change_and_states_the_interval_deviation():
    changes = [{"commit": "13dc3ee", "what": "plan arms", "moved": "finding 1", "before": "inconclusive", "after": "yes"}]
    text = disclosure_section(changes, "two-level bootstrap: seeds within a configuration, items clustered within seeds",
                              INTERVAL_METHOD)
    assert "| `13dc3ee` | plan arms | finding 1 | inconclusive | yes |" in text
    assert "closed-form crossed-design t-interval" in text and "Deviation from the registered plan" in text
    assert "two-level bootstrap" in text
    same = disclosure_section([], INTERVAL_METHOD, INTERVAL_METHOD)
    assert "No code change after the first result is recorded" in same and "Deviation" not in same


def test_the_replication_config_keeps_its_post_data_changes_as_data():
    from toolsense.study.config import StudyConfig, register_configs
    from toolsense.utils.compose import compose
    from toolsense.utils.config import to_config

    register_configs()
    cfg = to_config(StudyConfig, compose("reproduce", ["study=replication"]))
    commits = [c.commit for c in cfg.post_data_changes]
    assert {"00df0c1", "13dc3ee", "116220c"} <= set(commits)
    assert all(c.before and c.after and c.moved for c in cfg.post_data_changes)
