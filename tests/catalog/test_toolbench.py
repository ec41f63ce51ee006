"""catalog=toolbench: ToolGen's token names with the best text available, built once, cached."""

import gzip
import json

import pytest
from omegaconf import OmegaConf

from toolsense.catalog.builders import coverage_path, coverage_table
from toolsense.catalog.config import CatalogConfig, load_from_config
from toolsense.catalog.toolbench import SOURCES, build_toolbench_catalog
from toolsense.utils.io import sha256_file

CONF = __import__("pathlib").Path(__file__).resolve().parents[2] / "toolsense" / "conf" / "catalog" / "toolbench.yaml"


def tiny_data(root):
    """A data folder with one tool per source, hand-made so each expected source is known."""
    (root / "catalogs").mkdir(parents=True)
    (root / "toolbench_queries").mkdir()
    tokens = ["<<Finish>>", "<<Rel&&a>>", "<<Env&&b>>", "<<Rel&&a2>>", "<<env&&B  Two>>", "<<Qry&&c>>",
              "<<Env&&unknown api>>", "<<Nobody&&z>>", "<<Café&&d>>", "<<Both&&e>>"]
    (root / "toolbench_virtual_tokens.txt").write_text("\n".join(tokens) + "\n")

    def rec(name, desc, **kw):
        return json.dumps({"tool_name": name, "tool_title": name.split("&&")[0], "tool_description": f"svc {desc}",
                           "api_title": name.split("&&")[1], "api_description": desc, **kw})
    (root / "catalogs/toolsense_release.jsonl").write_text("\n".join([
        rec("Rel&&a", "release a"), rec("REL&&A2", "release a2 (case differs)"), rec("Both&&e", "release e")]) + "\n")
    with gzip.open(root / "catalogs/toolenv2404.jsonl.gz", "wt") as f:
        f.write("\n".join([rec("Env&&b", "env b", category="Data"), rec("Env&&b", "env b again"),
                           rec("Env&&B Two", "env b two"), rec("Cafe&&d", "env d (unaccented)"),
                           rec("Both&&e", "env e")]) + "\n")
    item = {"query": "q", "query_id": 1, "relevant APIs": [["Qry", "c"]], "api_list": [
        {"category_name": "Tools", "tool_name": "Qry", "api_name": "c", "api_description": "query-file c",
         "required_parameters": [{"name": "x", "type": "STRING", "description": "an x"}], "optional_parameters": []}]}
    (root / "toolbench_queries/G1_instruction.json").write_text(json.dumps([item]))
    return root


def read(out):
    return {r["tool_name"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_each_tool_gets_the_first_source_that_has_it(tmp_path):
    data = tiny_data(tmp_path / "data")
    out = tmp_path / "cache/catalogs/toolbench.jsonl"
    cov = build_toolbench_catalog(data, out)
    recs = read(out)
    assert list(recs) == ["Rel&&a", "Env&&b", "Rel&&a2", "env&&B  Two", "Qry&&c", "Env&&unknown api", "Nobody&&z",
                          "Café&&d", "Both&&e"]  # token order, <<Finish>> left out, names verbatim
    src = {n: r["source"] for n, r in recs.items()}
    assert src == {"Rel&&a": "release", "Env&&b": "toolenv", "Rel&&a2": "release_loose", "env&&B  Two": "toolenv_loose",
                   "Qry&&c": "toolbench_queries", "Env&&unknown api": "service", "Nobody&&z": "name",
                   "Café&&d": "toolenv_loose", "Both&&e": "release"}
    assert recs["Both&&e"]["api_description"] == "release e"  # the release wins over ToolEnv
    assert recs["Env&&b"]["api_description"] == "env b" and recs["Env&&b"]["category"] == "Data"  # first record kept
    assert recs["Rel&&a2"]["text_from"] == "REL&&A2" and recs["Café&&d"]["text_from"] == "Cafe&&d"
    assert recs["Qry&&c"]["parameters"] == [{"name": "x", "type": "STRING", "required": True, "description": "an x"}]
    svc = recs["Env&&unknown api"]
    assert (svc["tool_description"], svc["api_title"], svc["api_description"]) == ("svc env b", "unknown api", "")
    assert recs["Nobody&&z"] == {"tool_name": "Nobody&&z", "source": "name", "tool_title": "Nobody",
                                 "tool_description": "", "api_title": "z", "api_description": ""}
    assert cov["sources"] == {"release": 2, "toolenv": 1, "release_loose": 1, "toolenv_loose": 2,
                              "toolbench_queries": 1, "service": 1, "name": 1}
    assert json.loads(coverage_path(out).read_text())["output"]["sha256"] == sha256_file(out)
    assert "| toolenv_loose | 2 | 22.2% |" in coverage_table(cov)


def test_config_builds_on_first_use_or_names_the_command(tmp_path, monkeypatch):
    data = tiny_data(tmp_path / "data")
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TOOLSENSE_DATA", str(data))
    section = OmegaConf.to_container(OmegaConf.load(CONF), resolve=True)
    assert section["path"] == str(tmp_path / "cache/catalogs/toolbench.jsonl")
    with pytest.raises(FileNotFoundError, match=r"not built yet .* python -m toolsense\.catalog\.build toolbench"):
        load_from_config(CatalogConfig(**{**section, "auto_build": False}))
    cat = load_from_config(CatalogConfig(**section))
    assert len(cat) == 9 and cat["Café&&d"].api_description == "env d (unaccented)"
    with pytest.raises(ValueError, match=r"catalog\.build='nope'"):
        CatalogConfig(**{**section, "build": "nope"})
    with pytest.raises(ValueError, match=r"catalog\.build='toolbench' needs catalog\.path"):
        CatalogConfig(build="toolbench", data_dir=str(data))


def test_cli_prints_the_coverage_table(tmp_path, capsys):
    from toolsense.catalog.build import main

    data = tiny_data(tmp_path / "data")
    out = tmp_path / "tb.jsonl"
    assert main(["toolbench", "--data-dir", str(data), "--out", str(out)]) == 0
    first = capsys.readouterr().out
    assert "| release | 2 | 22.2% |" in first and "| **total** | **9** | 100% |" in first
    assert main(["toolbench", "--data-dir", str(data), "--out", str(out)]) == 0
    assert "exists (pass --force to rebuild)" in capsys.readouterr().out


# ---- the real catalog (skips without ../shared/data) ---------------------------------------

@pytest.fixture(scope="module")
def built(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("toolbench") / "toolbench.jsonl"
    return out, build_toolbench_catalog(shared_data, out)


def test_paper_catalog_is_toolgens_46984_tokens_with_coverage(built, shared_data):
    out, cov = built
    tokens = (shared_data / "toolbench_virtual_tokens.txt").read_text(encoding="utf-8").splitlines()
    cat = load_from_config(CatalogConfig(path=str(out), format="toolsense", build="toolbench", data_dir=str(shared_data)))
    assert len(cat) == 46984 == cov["n_tools"] == sum(cov["sources"].values())
    assert [t.token for t in cat] == tokens[1:]  # the flat index is exactly ToolGen's tokens
    assert cov["sources"] == {"release": 5317, "toolenv": 18670, "release_loose": 4, "toolenv_loose": 28,
                              "toolbench_queries": 490, "service": 11662, "name": 10813}
    assert list(cov["sources"]) == list(SOURCES)
    sms = cat["1 Cent SMS&&SendSMS"]
    assert sms.tool_description == "Send SMS for 1 US Cent to USA or Canada via this API"
    assert sms.api_description.startswith("Send an SMS to the USA or Canada for 1 cent")
    assert cat["AI  Quotes&&AI Quote"].tool_title == "AI  Quotes"  # double space kept, release text
    assert "👋 Demo Project&&Get Order" in cat  # emoji kept: ToolGen's token text


def test_paper_catalog_rebuild_is_byte_identical(built, tmp_path, shared_data):
    out, cov = built
    again = build_toolbench_catalog(shared_data, tmp_path / "again.jsonl")
    assert sha256_file(out) == sha256_file(tmp_path / "again.jsonl") == cov["output"]["sha256"] == again["output"]["sha256"]


def test_released_benchmarks_miss_only_the_tokens_toolgen_lacks(built, shared_data, caplog):
    from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
    from toolsense.evaluation.tasks import missing_gold

    out, _ = built
    known = {json.loads(line)["tool_name"] for line in out.read_text(encoding="utf-8").splitlines()}
    rrb = load_benchmark(BenchmarkConfig(loader="rrb", path=str(shared_data / "samples/rrb_sample.jsonl")))
    assert missing_gold(rrb.items, known)[1]["count"] == 0
    assert all(t in known for q in rrb.items for t in q.meta["pool"])
    g1 = load_benchmark(BenchmarkConfig(loader="toolbench", path=str(shared_data / "toolbench_queries/G1_instruction.json")))
    assert missing_gold(g1.items, known)[1]["names"] == ["LocationIQ&&Matrix", "LocationIQ&&Nearest",
                                                     "Wavecell SMS&&SMS-MT - Send SMS (GET)"]
