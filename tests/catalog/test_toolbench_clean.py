"""catalog=toolbench_clean: the paper's catalog without text from the ToolBench *test* query
files (whose api_list documents the very APIs the test queries were written from)."""

import gzip
import json

import pytest
from omegaconf import OmegaConf

from toolsense.catalog.builders import CATALOG_BUILDERS
from toolsense.catalog.toolbench import build_toolbench_catalog

CONF = __import__("pathlib").Path(__file__).resolve().parents[2] / "toolsense" / "conf" / "catalog"


def tiny_data(root):
    """Release knows Rel&&a; only a test query's api_list knows Qry&&c (and its service Qry)."""
    (root / "catalogs").mkdir(parents=True)
    (root / "toolbench_queries").mkdir()
    (root / "toolbench_virtual_tokens.txt").write_text("<<Finish>>\n<<Rel&&a>>\n<<Qry&&c>>\n<<Qry&&d>>\n")
    (root / "catalogs/toolsense_release.jsonl").write_text(json.dumps(
        {"tool_name": "Rel&&a", "tool_title": "Rel", "tool_description": "svc", "api_title": "a", "api_description": "release a"}) + "\n")
    with gzip.open(root / "catalogs/toolenv2404.jsonl.gz", "wt") as f:
        f.write("")
    item = {"query": "q", "query_id": 1, "relevant APIs": [["Qry", "c"]], "api_list": [
        {"category_name": "Tools", "tool_name": "Qry", "api_name": "c", "api_description": "the test query's text for c",
         "required_parameters": [], "optional_parameters": []}]}
    (root / "toolbench_queries/G1_instruction.json").write_text(json.dumps([item]))
    return root


def read(out):
    return {r["tool_name"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_clean_catalog_takes_no_text_from_test_queries(tmp_path):
    data = tiny_data(tmp_path / "data")
    full = build_toolbench_catalog(data, tmp_path / "toolbench.jsonl")
    clean = CATALOG_BUILDERS.get("toolbench_clean")(data, tmp_path / "toolbench_clean.jsonl")
    a, b = read(tmp_path / "toolbench.jsonl"), read(tmp_path / "toolbench_clean.jsonl")
    assert list(a) == list(b) == ["Rel&&a", "Qry&&c", "Qry&&d"]  # same tools, same order
    assert a["Qry&&c"]["source"] == "toolbench_queries" and a["Qry&&c"]["api_description"] == "the test query's text for c"
    assert a["Qry&&d"]["source"] == "service"  # its service's text came from the query file too
    assert {n: r["source"] for n, r in b.items()} == {"Rel&&a": "release", "Qry&&c": "name", "Qry&&d": "name"}
    assert "test query" not in (tmp_path / "toolbench_clean.jsonl").read_text()
    assert full["sources"]["toolbench_queries"] == 1 and clean["sources"]["toolbench_queries"] == 0
    assert full["query_files"] is True and clean["query_files"] is False
    assert not any(k.startswith("queries/") for k in clean["inputs"]) and "queries/G1_instruction" in full["inputs"]
    assert clean["command"].startswith("python -m toolsense.catalog.build toolbench_clean ")


def test_clean_config_names_its_own_cache_file_and_builder():
    cfg = OmegaConf.load(CONF / "toolbench_clean.yaml")
    assert cfg.build == "toolbench_clean" and cfg.path.endswith("/catalogs/toolbench_clean.jsonl")
    assert OmegaConf.load(CONF / "toolbench.yaml").path != cfg.path


@pytest.mark.slow  # builds the 46,984-tool catalog twice
def test_on_shared_data_490_tools_lose_their_query_text(shared_data, tmp_path):
    full = build_toolbench_catalog(shared_data, tmp_path / "full.jsonl")
    clean = build_toolbench_catalog(shared_data, tmp_path / "clean.jsonl", query_files=False)
    assert full["n_tools"] == clean["n_tools"] == 46984
    assert full["sources"]["toolbench_queries"] == 490 and clean["sources"]["toolbench_queries"] == 0
    fallback = ("toolbench_queries", "service", "name")
    assert sum(full["sources"][s] for s in fallback) == sum(clean["sources"][s] for s in fallback)
    assert all(full["sources"][s] == clean["sources"][s] for s in ("release", "toolenv", "release_loose", "toolenv_loose"))
