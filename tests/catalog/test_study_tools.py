"""catalog=study_tools: the released benchmarks' tools, RRB items whole, pool tools as hard negatives."""

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from toolsense.catalog.builders import coverage_path
from toolsense.catalog.config import CatalogConfig, load_from_config
from toolsense.catalog.study_tools import build_study_tools_catalog, rrb_path, select_tools
from toolsense.utils.io import DataError, sha256_file

CONF = Path(__file__).resolve().parents[2] / "toolsense" / "conf" / "catalog" / "study_tools.yaml"

ITEMS = [  # gold, pool: item 3 needs nothing new (its gold is a probe tool), 0 and 1 one tool each, 2 three
    {"gold": ["S&&A"], "pool": ["S&&A", "N&&1", "N&&2"]},
    {"gold": ["S&&A", "S&&B"], "pool": ["S&&A", "S&&B", "N&&3"]},
    {"gold": ["S&&C", "S&&D", "S&&E"], "pool": ["S&&C", "S&&D", "S&&E", "N&&4"]},
    {"gold": ["P&&1"], "pool": ["P&&1", "N&&5"]},
]


def test_items_enter_whole_fewest_new_tools_first_then_pool_negatives():
    roles, covered = select_tools(ITEMS, {"P&&1", "P&&2"}, n_tools=6, seed=0)
    assert covered == [0, 1, 3]  # item 2 needs 3 more tools than the 2 left: left out whole
    assert {t for t, r in roles.items() if r != "pool_negative"} == {"P&&1", "P&&2", "S&&A", "S&&B"}
    negatives = [t for t, r in roles.items() if r == "pool_negative"]
    assert len(roles) == 6 and len(negatives) == 2 and set(negatives) <= {"N&&1", "N&&2", "N&&3", "N&&5"}
    owners = [next(i for i in covered if t in ITEMS[i]["pool"]) for t in negatives]
    assert len(set(owners)) == 2  # round-robin: one negative from each of two items, not two from one
    assert select_tools(ITEMS, {"P&&1", "P&&2"}, 6, seed=0) == (roles, covered)


def test_a_larger_budget_covers_every_item_and_runs_out_of_negatives():
    roles, covered = select_tools(ITEMS, {"P&&1"}, n_tools=100, seed=3)
    assert covered == [0, 1, 2, 3]
    assert sorted(t for t, r in roles.items() if r == "pool_negative") == ["N&&1", "N&&2", "N&&3", "N&&4", "N&&5"]
    with pytest.raises(ValueError, match="n_tools=1 is below the 2 probe tools"):
        select_tools(ITEMS, {"P&&1", "P&&2"}, 1, 0)


def tiny_data(root: Path) -> Path:
    (root / "catalogs").mkdir(parents=True)
    (root / "released").mkdir()
    names = sorted({t for it in ITEMS for t in it["pool"]} | {"P&&2", "X&&unused"})
    (root / "catalogs/toolsense_release.jsonl").write_text("".join(
        json.dumps({"tool_name": n, "tool_title": n.split("&&")[0], "api_title": n.split("&&")[1],
                    "api_description": f"does {n}"}) + "\n" for n in names))

    def tools(ns):
        return [{"tool_name": n} for n in ns]
    rrb = [{"sample_id": f"s{i}", "query": f"query {i}", "tool": tools(it["gold"]) if len(it["gold"]) > 1 else
            {"tool_name": it["gold"][0]}, "analyzed_tools": tools(it["pool"]), "complexity": ["easy", "hard"][i % 2]}
           for i, it in enumerate(ITEMS)]
    (root / "released/rrb_dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rrb))
    (root / "released/mcq_dev.jsonl").write_text(json.dumps({"id": "m", "tool": {"tool_name": "P&&1"}}) + "\n")
    (root / "released/qa_dev.jsonl").write_text(json.dumps({"id": "q", "tool": {"tool_name": "P&&2"}}) + "\n")
    return root


def test_builder_writes_catalog_rrb_test_set_and_coverage(tmp_path):
    data = tiny_data(tmp_path / "data")
    out = tmp_path / "cache/catalogs/study_tools.jsonl"
    cov = build_study_tools_catalog(data, out, n_tools=6)
    names = [json.loads(line)["tool_name"] for line in out.read_text().splitlines()]
    assert len(names) == 6 and names == sorted(names)  # release-file order (sorted in this file)
    assert {"P&&1", "P&&2", "S&&A", "S&&B"} <= set(names) and "X&&unused" not in names
    rrb = [json.loads(line)["sample_id"] for line in rrb_path(out).read_text().splitlines()]
    assert rrb == ["s0", "s1", "s3"] and rrb_path(out).name == "study_tools.rrb.jsonl"
    assert cov["sources"] == {"probe": 2, "rrb_gold": 2, "pool_negative": 2}
    assert cov["rrb_items"]["covered"] == 3 and cov["rrb_items"]["covered_by_complexity"] == {"easy": 1, "hard": 2}
    assert cov["probe_items"] == {"mcq_dev.jsonl": {"covered": 1, "total": 1}, "qa_dev.jsonl": {"covered": 1, "total": 1}}
    saved = json.loads(coverage_path(out).read_text())
    assert saved["output"]["sha256"] == sha256_file(out) and saved["rrb_test"]["sha256"] == sha256_file(rrb_path(out))
    again = tmp_path / "again.jsonl"
    build_study_tools_catalog(data, again, n_tools=6)
    assert again.read_bytes() == out.read_bytes() and rrb_path(again).read_bytes() == rrb_path(out).read_bytes()


def test_bad_inputs_name_the_file(tmp_path):
    data = tiny_data(tmp_path / "data")
    (data / "released/qa_dev.jsonl").write_text(json.dumps({"id": "q", "tool": {"tool_name": "Gone&&api"}}) + "\n")
    with pytest.raises(DataError, match=r"toolsense_release\.jsonl: 1 tools named by the released benchmarks"):
        build_study_tools_catalog(data, tmp_path / "o.jsonl", n_tools=6)
    (data / "released/rrb_dev.jsonl").write_text(json.dumps({"tool": {"tool_name": "S&&A"}}) + "\n")
    with pytest.raises(DataError, match=r"rrb_dev\.jsonl:1: an RRB item needs fields 'tool' and 'analyzed_tools'"):
        build_study_tools_catalog(data, tmp_path / "o.jsonl", n_tools=6)
    (data / "released/mcq_dev.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="catalog study_tools: input files missing .*mcq_dev"):
        build_study_tools_catalog(data, tmp_path / "o.jsonl")


def test_config_builds_on_first_use(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TOOLSENSE_DATA", str(tiny_data(tmp_path / "data")))
    section = OmegaConf.to_container(OmegaConf.load(CONF), resolve=True)
    assert section["path"] == str(tmp_path / "cache/catalogs/study_tools.jsonl") and section["build"] == "study_tools"
    with pytest.raises(FileNotFoundError, match=r"python -m toolsense\.catalog\.build study_tools"):
        load_from_config(CatalogConfig(**{**section, "auto_build": False}))
    cat = load_from_config(CatalogConfig(**section))  # the default 1,000 takes every tool of an item or a probe ...
    assert len(cat) == 12 and "X&&unused" not in {t.name for t in cat}  # ... of the 13, not the one in neither


# ---- the real catalog (skips without ../shared/data) ---------------------------------------


def test_real_catalog_covers_every_released_item(shared_data, tmp_path):
    out = tmp_path / "study_tools.jsonl"
    cov = build_study_tools_catalog(shared_data, out)
    assert cov["n_tools"] == 1000 and cov["sources"] == {"probe": 232, "rrb_gold": 699, "pool_negative": 69}
    assert cov["rrb_items"]["covered"] == cov["rrb_items"]["total"] == 243
    assert cov["probe_items"] == {"mcq_dev.jsonl": {"covered": 230, "total": 230},
                                  "qa_dev.jsonl": {"covered": 232, "total": 232}}
    assert cov["output"]["sha256"] == "7a14396d7430fb89f2999a1f0559ced0032bcd03e295b30bc881ac3ea704b222"
    small = build_study_tools_catalog(shared_data, tmp_path / "small.jsonl", n_tools=600)
    assert small["sources"]["pool_negative"] == 0 and 100 <= small["rrb_items"]["covered"] < 243


def test_probe_catalog_keeps_the_probe_tools_alone(tmp_path, monkeypatch):
    roles, covered = select_tools(ITEMS, {"P&&1", "P&&2"}, n_tools=None, seed=0)
    assert roles == {"P&&1": "probe", "P&&2": "probe"}  # no room for a new gold tool or a negative ...
    assert covered == [3]  # ... but an item whose gold tools are all probe tools is covered
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TOOLSENSE_DATA", str(tiny_data(tmp_path / "data")))
    section = OmegaConf.to_container(OmegaConf.load(CONF.with_name("study_probe_tools.yaml")), resolve=True)
    assert section["build"] == "study_probe_tools"
    cat = load_from_config(CatalogConfig(**section))
    assert sorted(t.name for t in cat) == ["P&&1", "P&&2"]
    cov = json.loads(coverage_path(Path(section["path"])).read_text())
    assert cov["sources"] == {"probe": 2, "rrb_gold": 0, "pool_negative": 0} and cov["rrb_items"]["covered"] == 1
    assert cov["command"].startswith("python -m toolsense.catalog.build study_probe_tools")
    assert [json.loads(x)["sample_id"] for x in rrb_path(Path(section["path"])).read_text().splitlines()] == ["s3"]


def test_real_probe_catalog_is_the_232_probe_tools(shared_data, tmp_path):
    from toolsense.catalog.study_tools import build_study_probe_tools_catalog

    cov = build_study_probe_tools_catalog(shared_data, tmp_path / "study_probe_tools.jsonl")
    assert cov["n_tools"] == 232 and cov["sources"] == {"probe": 232, "rrb_gold": 0, "pool_negative": 0}
    print("RRB items covered by the probe tools alone:", cov["rrb_items"]["covered"])
    assert cov["probe_items"] == {"mcq_dev.jsonl": {"covered": 230, "total": 230},
                                  "qa_dev.jsonl": {"covered": 232, "total": 232}}


def test_real_probe_catalog_120_holds_the_tools_of_the_scored_items(shared_data, tmp_path):
    from toolsense.catalog.study_tools import PROBE_ITEMS, build_study_probe_tools_120_catalog

    cov = build_study_probe_tools_120_catalog(shared_data, tmp_path / "study_probe_tools_120.jsonl")
    assert cov["n_tools"] == 122 and cov["sources"] == {"probe": 122, "rrb_gold": 0, "pool_negative": 0}
    assert cov["probe_items"] == {"mcq_dev.jsonl": {"covered": PROBE_ITEMS, "total": PROBE_ITEMS},
                                  "qa_dev.jsonl": {"covered": PROBE_ITEMS, "total": PROBE_ITEMS}}
    assert cov["probe_items_per_file"] == PROBE_ITEMS and cov["command"].startswith(
        "python -m toolsense.catalog.build study_probe_tools_120")
    names = {json.loads(x)["tool_name"] for x in (tmp_path / "study_probe_tools_120.jsonl").read_text().splitlines()}
    for probe in ("mcq_dev.jsonl", "qa_dev.jsonl"):  # every scored item's tool, and no other tool
        lines = (shared_data / "released" / probe).read_text().splitlines()[:PROBE_ITEMS]
        assert {json.loads(x)["tool"]["tool_name"] for x in lines} <= names
    with pytest.raises(ValueError, match="probe_items"):
        build_study_tools_catalog(shared_data, tmp_path / "x.jsonl", n_tools=None, probe_items=0)
