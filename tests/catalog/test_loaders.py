import json
import logging

import pytest

from toolsense.catalog import (
    DataError,
    Tool,
    canonical_name,
    load_catalog,
    load_query_jsonl,
    load_toolbench_api_list,
    load_toolbench_queries,
    load_toolsense,
    load_virtual_tokens,
    split_name,
)
from toolsense.catalog.tool import loose_key


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def rec(name, **kw):
    return json.dumps({"tool_name": name, "tool_title": name.split("&&")[0], "api_title": name.split("&&", 1)[-1], **kw})


# ---- naming -------------------------------------------------------------------------------

def test_canonical_name_is_the_name_as_written_and_splits_at_first_separator():
    # ToolGen's token list keeps accents and emoji, so the canonical name (= the token text) does too
    assert canonical_name("Café Météo&&Prévision") == "Café Météo&&Prévision"
    assert split_name("Svc&&a&&b") == ("Svc", "a&&b")
    t = Tool.from_name("Ærø&&get  it")
    assert (t.name, t.service, t.api, t.raw_name, t.token) == ("Ærø&&get  it", "Ærø", "get  it", "Ærø&&get  it", "<<Ærø&&get  it>>")
    # near-duplicates collide up to case, whitespace (also around the separator) and accents
    assert loose_key("Ærø &&Get  It") == loose_key("AEro&&get it") == "aero&&get it"
    assert loose_key("A&&b") != loose_key("Ab&&")


# ---- the real shared catalogs --------------------------------------------------------------

def test_toolsense_release_loads_exact_count(shared_data):
    cat = load_catalog(shared_data / "catalogs/toolsense_release.jsonl")
    assert len(cat) == 5348 and cat.records_read == 5348
    assert len(cat.services()) == 2594
    # names that differ only by case/whitespace are kept apart but reported
    assert ["AI  Quotes&&AI Quote", "AI Quotes&&AI Quote"] in cat.near_duplicates()


def test_toolenv2404_counts_and_duplicate_policy(shared_data):
    path = shared_data / "catalogs/toolenv2404.jsonl.gz"
    with pytest.raises(DataError, match=r"toolenv2404\.jsonl\.gz:21: duplicate tool name 'anadolu&&listUsers' \(first seen at .*:18\)"):
        load_catalog(path)
    cat = load_catalog(path, on_duplicate="first")
    assert cat.records_read == 46803
    assert len(cat) == 46270 and len(cat.dropped) == 533
    assert cat["anadolu&&listUsers"].category == "Advertising"


def test_virtual_token_list_and_release_overlap(shared_data):
    toks = load_virtual_tokens(shared_data / "toolbench_virtual_tokens.txt")
    assert len(toks) == 46984  # 46,985 lines minus the <<Finish>> control token
    assert "<<Finish>>" not in {t.token for t in toks}
    release = load_catalog(shared_data / "catalogs/toolsense_release.jsonl")
    assert sum(n in toks for n in release.names) == 5317  # the rest differ by accents only in raw form


def test_toolbench_query_files(shared_data):
    f = shared_data / "toolbench_queries/G1_instruction.json"
    qs = load_toolbench_queries(f)
    assert len(qs) == 163
    assert qs[0].tools == ("TheClique&&Transfermarkt search", "TheClique&&Transfermarkt details")
    cat = load_toolbench_api_list(f)
    assert all(n in cat for q in qs for n in q.tools)
    assert cat["TheClique&&Songkick concert"].parameters[0].name == "id_conc"


# ---- malformed input: every case names file:line and field --------------------------------

@pytest.mark.parametrize(
    "lines, message",
    [
        ([rec("A&&x"), "{not json"], r"bad\.jsonl:2: malformed JSON"),
        ([rec("A&&x"), "[1, 2]"], r"bad\.jsonl:2: expected a JSON object"),
        ([json.dumps({"tool_title": "A"})], r"bad\.jsonl:1: missing field 'tool_name'"),
        ([json.dumps({"tool_name": "  "})], r"bad\.jsonl:1: field 'tool_name' is empty"),
        ([json.dumps({"tool_name": 7})], r"bad\.jsonl:1: field 'tool_name' must be a string"),
        ([json.dumps({"tool_name": "NoSeparator"})], r"bad\.jsonl:1: field 'tool_name' \('NoSeparator'\) must look like"),
        ([json.dumps({"tool_name": "&&api"})], r"bad\.jsonl:1: field 'tool_name' .* empty service or API part"),
        ([rec("A&&x"), "", rec("A&&x")], r"bad\.jsonl:3: duplicate tool name 'A&&x' \(first seen at .*bad\.jsonl:1\)"),
        ([rec("A&&x", parameters=[{"type": "string"}])], r"bad\.jsonl:1: field 'parameters\[0\]\.name' is missing"),
    ],
)
def test_malformed_catalog_lines_name_file_line_and_field(tmp_path, lines, message):
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(DataError, match=message):
        load_toolsense(path)


def test_duplicate_policy_first_logs_one_line_naming_the_count_and_a_file_listing_all(tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("TOOLSENSE_CACHE", str(tmp_path / "cache"))
    lines = [rec("A&&x"), rec("A&&y"), rec("A&&x"), rec("Ä&&y"), rec("A&&y"), rec("A&&x")]
    path = write_lines(tmp_path / "dups.jsonl", lines)
    with caplog.at_level(logging.WARNING):
        cat = load_toolsense(path, on_duplicate="first")
    assert cat.names == ["A&&x", "A&&y", "Ä&&y"]  # 'Ä&&y' is its own tool (a near-duplicate of 'A&&y')
    assert cat.records_read == 6
    dup_lines = [r.getMessage() for r in caplog.records if "duplicate tool names dropped" in r.getMessage()]
    assert len(dup_lines) == 1 and dup_lines[0].startswith("3 duplicate tool names dropped")
    listing = cat.report_files["dropped"]
    assert str(listing) in dup_lines[0] and listing.parent == tmp_path / "cache" / "reports"
    body = [ln for ln in listing.read_text().splitlines() if not ln.startswith("#")]
    assert [ln.split(": duplicate")[0] for ln in body] == [f"{path}:3", f"{path}:5", f"{path}:6"]
    assert f"(first seen at {path}:2)" in body[1]
    near = cat.report_files["near_duplicates"].read_text()
    assert f"'A&&y' ({path}:2) | 'Ä&&y' ({path}:4)" in near
    assert len(caplog.records) == 2  # one line for the drops, one for the near-duplicates, nothing per record


def test_near_duplicates_reported_not_merged(tmp_path, caplog):
    path = write_lines(tmp_path / "near.jsonl", [rec("Bybit&&Order  Book"), rec("Bybit&&Order Book"), rec("bybit&&order book")])
    with caplog.at_level(logging.WARNING):
        cat = load_toolsense(path)
    assert len(cat) == 3
    assert cat.near_duplicates() == [["Bybit&&Order  Book", "Bybit&&Order Book", "bybit&&order book"]]
    assert any("near-duplicate tool name groups" in r.getMessage() for r in caplog.records)


def test_virtual_token_list_errors(tmp_path):
    path = write_lines(tmp_path / "toks.txt", ["<<Finish>>", "<<A&&b>>", "A&&c"])
    with pytest.raises(DataError, match=r"toks\.txt:3: token 'A&&c' is not of the form"):
        load_virtual_tokens(path)


@pytest.mark.parametrize("name, text", [("empty.jsonl", ""), ("blank.jsonl", "\n  \n\n"), ("toks.txt", "<<Finish>>\n\n")])
def test_a_catalog_without_tools_is_refused_naming_the_file(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    with pytest.raises(DataError, match=rf"{name.replace('.', '[.]')}: the catalog holds no tools"):
        load_catalog(tmp_path / name)


def test_gzip_catalog(tmp_path):
    import gzip

    path = tmp_path / "cat.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(rec("A&&x", api_description="does x") + "\n" + rec("B&&y") + "\n")
    cat = load_catalog(path)
    assert cat.names == ["A&&x", "B&&y"] and cat["A&&x"].api_description == "does x"


def test_query_jsonl_gold_forms_and_errors(tmp_path):
    good = write_lines(tmp_path / "q.jsonl", [
        json.dumps({"query": "hi", "tools": ["A&&x", "<<B&&y>>", ["C", "z"], {"tool_name": "Dé&&w"}]}),
    ])
    (q,) = load_query_jsonl(good)
    assert q.tools == ("A&&x", "B&&y", "C&&z", "Dé&&w")  # as written: ToolGen's tokens keep accents
    bad = write_lines(tmp_path / "qb.jsonl", [json.dumps({"query": "hi", "tools": ["A&&x"]}), json.dumps({"query": "", "tools": ["A&&x"]})])
    with pytest.raises(DataError, match=r"qb\.jsonl:2: field 'query' is missing or empty"):
        load_query_jsonl(bad)
    bad2 = write_lines(tmp_path / "qc.jsonl", [json.dumps({"query": "hi", "tools": ["nope"]})])
    with pytest.raises(DataError, match=r"qc\.jsonl:1: field 'tools\[0\]' \('nope'\) must look like"):
        load_query_jsonl(bad2)
    # the ToolBench loader refuses a blank query the same way (one check serves both)
    tb = tmp_path / "G1_query.json"
    tb.write_text(json.dumps([{"query_id": 7, "query": "  ", "relevant APIs": [["S", "a"]]}]))
    with pytest.raises(DataError, match=r"G1_query\.json: item 1: field 'query' is missing or empty"):
        load_toolbench_queries(tb)


def test_a_token_list_with_a_byte_that_is_not_utf8_names_file_line_and_column(tmp_path):
    """Issue 49: it was a raw ``UnicodeDecodeError ... position 226`` from the text stream."""
    from toolsense.catalog import load_catalog
    from toolsense.utils.errors import DataError

    path = tmp_path / "tokens.txt"
    path.write_bytes(b"<<Finish>>\r\n<<Weather&&current>>\r\n<<Caf\xe9&&menu>>\n")
    with pytest.raises(DataError, match=rf"^{path}:3: not UTF-8 text \(byte 0xe9 at column 6\); re-encode the file as UTF-8$"):
        load_catalog(path)
    path.write_bytes(b"<<Finish>>\r\n<<Weather&&current>>\r\n<<Cafe&&menu>>\n")  # CRLF line ends are line ends
    assert [t.name for t in load_catalog(path)] == ["Weather&&current", "Cafe&&menu"]
