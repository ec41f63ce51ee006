"""Row labels say what differs between configurations as ``key=value`` (never Python dict text), a
Stage 1 that arms differing only in Stage 2 share is one row counted once, and run folders are named
with their sweep (two sweeps number their runs alike)."""

from __future__ import annotations

from tests.comparison.test_compare import _est, _probe, _run, _write
from tests.comparison.test_plots import SOURCES
from toolsense.comparison.compare import collect, comparison
from toolsense.reporting.compare_report import query_records, source_folders


def _arms(root, stage1=(0.2, 0.2)):
    """The replication archive's shape: grid/0_tg-lora (verbose queries) and appendix_e/0_tg-lora
    (realistic ones), seed 0 both, a Stage-1 retrieval result and Stage-2 probe each."""
    runs = []
    for sweep, kind, rc1, s1 in (("grid", "verbose", 0.5, stage1[0]), ("appendix_e", "realistic_template", 0.6, stage1[1])):
        run = _run(root / sweep, "0_tg-lora", "tg", "lora", rc1, 0.3, seed=0, extra=SOURCES.format(kind=kind))
        _write(run / "eval" / "stage1" / "standard" / "model" / "results.json", {
            "benchmark": "standard", "system": "m:stage1", "kind": "retrieval", "source": {"run": str(run), "stage": "stage1"},
            "metrics": {"Rc@1": _est(s1)}, "n": 4})
        _probe(run, "stage2", [1, 0, 1, 1] if kind == "verbose" else [1, 1, 1, 1])
        runs.append(run)
    return runs


def test_labels_name_the_differing_key_and_a_shared_stage1_is_one_row(tmp_path):
    _arms(tmp_path)
    comp = comparison(collect([tmp_path]), ["Rc@1"])
    assert comp["rows"] == ["tg-lora (stage2.sources.kind=realistic_template)", "tg-lora (stage2.sources.kind=verbose)",
                            "tg-lora:stage1", "bm25"]  # the path follows the kind: not shown; no dict text
    assert not any("{" in r or "'" in r for r in comp["rows"])
    stage1 = comp["cells"]["tg-lora:stage1"]["standard Rc@1"]
    assert stage1["value"] == 0.2 and stage1["n_seeds"] == 1  # one Stage 1 (seed 0), seen through two arms, once
    assert isinstance(comp["sources"]["tg-lora:stage1 | standard Rc@1"], str)
    assert set(comp["stage1_of"].values()) == {"tg-lora:stage1"} and len(comp["stage1_of"]) == 2
    runs = {row: {rec["sys"][row]["run"] for rec in query_records(source_folders(comp), [1]) if row in rec["sys"]}
            for row in comp["rows"][:2]}
    assert runs == {"tg-lora (stage2.sources.kind=realistic_template)": {"appendix_e/0_tg-lora"},
                    "tg-lora (stage2.sources.kind=verbose)": {"grid/0_tg-lora"}}


def test_stage1_runs_that_differ_are_seeds_not_one(tmp_path):
    """Equal configuration and seed but other Stage-1 numbers (a non-deterministic GPU run): two runs, pooled."""
    _arms(tmp_path, stage1=(0.2, 0.4))
    cell = comparison(collect([tmp_path]), ["Rc@1"])["cells"]["tg-lora:stage1"]["standard Rc@1"]
    assert cell["n_seeds"] == 2 and abs(cell["value"] - 0.3) < 1e-9
