"""Rating sheets for human agreement (annotate.py) and Fleiss' κ from filled sheets (annotate.py task=kappa)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from toolsense.comparison.annotate import AnnotateConfig, kappas, register_configs, run
from toolsense.utils.compose import compose
from toolsense.utils.io import DataError

ROOT = Path(__file__).resolve().parents[2]
WIKIPEDIA = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def _evaluate(overrides, out):
    register_configs()
    return compose("annotate", [*overrides, f"output_dir={out}"])


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_annotate_writes_a_sheet_per_benchmark(tmp_path):
    suite = [f"+benchmark@benchmarks.{b}=demo_{b}" for b in ("standard", "realistic", "mcq", "qa")]
    out = run(_evaluate([*suite, "benchmarks.mcq.limit=64", "annotate.items=5", "annotate.raters=3"], tmp_path))
    assert sorted(out["sheets"]) == ["mcq", "qa", "realistic", "standard"]
    assert sorted(out["keys"]) == sorted(out["sheets"])
    mcq = _rows(tmp_path / "mcq_sheet.csv")
    # raters rate blind: no gold column beside the rater columns, the key lies in its own file
    assert list(mcq[0]) == ["benchmark", "item_id", "question", "options", "categories", "rater_1", "rater_2", "rater_3"]
    assert len(mcq) == 5 and all(r["rater_1"] == "" and r["categories"] == "A|B|C|D" for r in mcq)
    key = {r["item_id"]: r["gold"] for r in _rows(tmp_path / "mcq_key.csv")}
    assert list(_rows(tmp_path / "mcq_key.csv")[0]) == ["benchmark", "item_id", "gold"] and set(key) == {r["item_id"] for r in mcq}
    probes = [json.loads(x) for x in (ROOT / "toolsense/catalog/demo/probes_mcq.jsonl").read_text().splitlines()]
    correct = {p["id"]: p["correct_answer"] for p in probes}
    for r in mcq:  # the key's letter points at the correct answer among the options shown on the sheet
        shown = dict(o.split(". ", 1) for o in r["options"].split(" | "))
        assert shown[key[r["item_id"]]] == correct[r["item_id"]] and r["question"].startswith("[")
        assert key[r["item_id"]] + ". " + correct[r["item_id"]] not in r["question"]
    assert set(key.values()) != {"A"}  # options are shuffled for raters too
    qa = _rows(tmp_path / "qa_sheet.csv")
    assert all(r["categories"] == "Yes|No" and "gold" not in r for r in qa)
    assert {r["gold"] for r in _rows(tmp_path / "qa_key.csv")} <= {"Yes", "No"}
    std = _rows(tmp_path / "standard_sheet.csv")
    assert all(r["categories"] == "yes|partly|no" and "&&" in r["options"] for r in std)
    assert {r["gold"] for r in _rows(tmp_path / "standard_key.csv")} == {""}  # raters judge the gold tools themselves
    again = _rows(run(_evaluate(["benchmark=demo_mcq", "benchmark.limit=64", "annotate.items=5"],
                                tmp_path / "b"))["sheets"]["mcq"])
    assert again == mcq  # the same seeded sample of the same 64 items, options in the same order


def _sheet(path, matrix, raters, first=0):
    """A filled sheet: item i has matrix[i][c] ratings of category c+1 spread over rater columns."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "item_id", "question", "options", "categories"] + [f"rater_{r + 1}" for r in range(raters)])
        for i, counts in enumerate(matrix):
            ratings = [str(c + 1) for c, n in enumerate(counts) for _ in range(n)]
            w.writerow(["toy", f"i{i}", "q", "", "1|2|3|4|5"] + ratings[first:first + raters])
    return path


def test_kappa_of_the_wikipedia_example_from_one_or_split_sheets(tmp_path):
    one = _sheet(tmp_path / "all.csv", WIKIPEDIA, 14)
    assert kappas([one])["toy"]["kappa"] == pytest.approx(0.20993, abs=1e-4)
    halves = [_sheet(tmp_path / "a.csv", WIKIPEDIA, 7), _sheet(tmp_path / "b.csv", WIKIPEDIA, 7, first=7)]
    res = run(_evaluate(["task=kappa", f"annotate.sheets=[{halves[0]},{halves[1]}]"], tmp_path / "out"))
    assert res["toy"] == {"kappa": pytest.approx(0.20993, abs=1e-4), "items": 10, "raters": 14, "categories": list("12345"),
                          "agreement": None}
    assert "| toy | 0.210 | 10 | 14 |" in (tmp_path / "out" / "kappa.md").read_text()


def test_kappa_refuses_bad_ratings(tmp_path):
    path = _sheet(tmp_path / "s.csv", [[2, 0, 0, 0, 0], [0, 2, 0, 0, 0]], 2)
    path.write_text(path.read_text().replace(",1,1", ",1,7"))
    with pytest.raises(DataError, match=r"s.csv:2: rater_2='7' is not one of '1\|2\|3\|4\|5'"):
        kappas([path])
    path = _sheet(tmp_path / "u.csv", [[2, 0, 0, 0, 0], [0, 1, 0, 0, 0]], 2)
    with pytest.raises(DataError, match="item 'i1' has 1"):
        kappas([path])
    with pytest.raises(ValueError, match="annotate.raters >= 2"):
        AnnotateConfig(raters=1)


def test_kappa_reads_the_answer_key_beside_the_sheet(tmp_path):
    """Two raters fill the blind MCQ sheet; κ is their agreement, the key scores them: rater 1
    answers every item as the key does, rater 2 as the key on all but the first two items."""
    run(_evaluate(["benchmark=demo_mcq", "annotate.items=6", "annotate.raters=2"], tmp_path))
    key = {r["item_id"]: r["gold"] for r in _rows(tmp_path / "mcq_key.csv")}
    rows = _rows(tmp_path / "mcq_sheet.csv")
    wrong = {"A": "B", "B": "C", "C": "D", "D": "A"}
    for i, r in enumerate(rows):
        r["rater_1"] = key[r["item_id"]]
        r["rater_2"] = wrong[key[r["item_id"]]] if i < 2 else key[r["item_id"]]
    filled = tmp_path / "filled"
    filled.mkdir()
    with open(filled / "mcq_filled.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = run(_evaluate(["task=kappa", f"annotate.sheets=[{filled / 'mcq_filled.csv'}]"], tmp_path / "k0"))
    assert res["mcq"]["agreement"] is None  # no key beside the filled sheet, none given
    res = run(_evaluate(["task=kappa", f"annotate.sheets=[{filled / 'mcq_filled.csv'}]",
                         f"annotate.keys=[{tmp_path / 'mcq_key.csv'}]"], tmp_path / "k1"))
    assert res["mcq"]["agreement"] == pytest.approx(10 / 12) and res["mcq"]["items"] == 6
    assert "| mcq | " in (tmp_path / "k1" / "kappa.md").read_text() and "| 83.3 |" in (tmp_path / "k1" / "kappa.md").read_text()
    import shutil

    shutil.copy(filled / "mcq_filled.csv", tmp_path / "mcq_filled.csv")  # beside the key: found without annotate.keys
    assert run(_evaluate(["task=kappa", f"annotate.sheets=[{tmp_path / 'mcq_filled.csv'}]"], tmp_path / "k2")) == res
    other = tmp_path / "other"
    run(_evaluate(["benchmark=demo_mcq", "annotate.items=6", "annotate.seed=5"], other))
    with pytest.raises(DataError, match=r"benchmark 'mcq': the answer key has no gold for rated item\(s\)"):
        kappas([filled / "mcq_filled.csv"], [other / "mcq_key.csv"])


@pytest.mark.parametrize("overrides, message", [
    (["annotate.raters=1"], "annotate.raters >= 2"),
    (["annotate.retrieval_categories=[yes,Yes]"], "annotate.retrieval_categories needs two or more distinct"),
    (["task=score"], "task='score': choose from ['sheets', 'kappa']"),
])
def test_annotate_yaml_refuses_bad_values_naming_the_field(overrides, message, tmp_path):
    from toolsense.comparison.annotate import AnnotateJobConfig
    from toolsense.utils.config import to_config

    with pytest.raises(ValueError) as e:
        to_config(AnnotateJobConfig, _evaluate(overrides, tmp_path))
    assert message in str(e.value)
