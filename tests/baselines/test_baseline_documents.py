"""What a baseline indexes is its config: the document template (ToolGen's corpus text among
them), BM25's tokenizer and scorer (rank_bm25's Okapi, checked against hand-computed scores),
and the fingerprint that keeps two settings out of one folder."""

import math
from pathlib import Path

import bm25s
import numpy as np
import pytest
from omegaconf import OmegaConf

from toolsense.baselines.bm25 import BM25_SCORERS, BM25_TOKENIZERS
from toolsense.baselines.config import BaselineConfig
from toolsense.baselines.rankers import build_baseline
from toolsense.catalog import load_catalog, load_query_jsonl
from toolsense.catalog.tool import Parameter, Tool
from toolsense.models.encoders import TEXT_TEMPLATES

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "evaluation"
CONF = Path(__file__).resolve().parents[2] / "toolsense" / "conf" / "baseline"

TOOL = Tool.from_name("Weather Now&&Forecast", tool_title="Weather Now", tool_description="All about weather",
                      api_title="Forecast", api_description="Seven-day forecast for a city", category="Weather",
                      parameters=(Parameter("city", "STRING", True, "city name"), Parameter("days", "NUMBER", False, "")))


def test_toolgen_document_is_toolbench_corpus_text():
    assert TEXT_TEMPLATES.get("toolgen")(TOOL) == (
        'Weather, Weather Now, Forecast, Seven-day forecast for a city, '
        'required_params: [{"name": "city", "type": "STRING", "description": "city name"}], '
        'optional_params: [{"name": "days", "type": "NUMBER", "description": ""}], return_schema: ""')
    bare = Tool.from_name("Café&&ping")  # no category (ToolGen writes "" + ", "), description or parameters
    assert TEXT_TEMPLATES.get("toolgen")(bare) == ', Café, ping, , required_params: [], optional_params: [], return_schema: ""'


def test_other_documents_name_their_fields():
    assert TEXT_TEMPLATES.get("names")(TOOL) == "Weather Now Forecast"
    assert TEXT_TEMPLATES.get("api_text")(TOOL) == "Forecast: Seven-day forecast for a city"
    assert TEXT_TEMPLATES.get("tool_text")(TOOL).splitlines() == [
        "Service: Weather Now", "Service description: All about weather", "API: Forecast",
        "API description: Seven-day forecast for a city", "Parameters: city (STRING, required), days (NUMBER)"]


def test_tokenizers():
    words = BM25_TOKENIZERS.get("words")(["I'm in Paris, NOW!"])
    assert words == [["i", "'", "m", "in", "paris", ",", "now", "!"]]
    assert BM25_TOKENIZERS.get("bm25s_en")(["I'm in Paris, NOW!"]) == [["paris", "now"]]  # stopwords and 1-letter words out


def test_okapi_matches_hand_computed_bm25okapi():
    docs = [["a", "b"], ["a"], ["c", "c", "a"]]
    score = BM25_SCORERS.get("okapi")(docs)
    # N = 3, avgdl = 2; idf(b) = ln(2.5/1.5); "a" is in all 3 docs: idf = ln(0.5/3.5) < 0 -> 0.25 * mean idf
    idf_b = idf_c = math.log(2.5 / 1.5)
    idf_a = 0.25 * (math.log(0.5 / 3.5) + idf_b + idf_c) / 3

    def w(tf, dl):
        return tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * dl / 2))
    expected = np.array([[idf_b * w(1, 2), 0, 0],
                         [2 * idf_a * w(1, 2), 2 * idf_a * w(1, 1), 2 * idf_a * w(1, 3) + idf_c * w(2, 3)]])
    got = score([["b", "unseen"], ["a", "a", "c"]])  # a repeated query term counts twice, an unknown one not at all
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_default_bm25_is_unchanged_bm25s():
    """The default setting scores exactly as bm25s indexing bm25s' token ids did before."""
    cat, queries = load_catalog(ASSETS / "tools.jsonl"), load_query_jsonl(ASSETS / "queries.jsonl")
    model = bm25s.BM25()
    model.index(bm25s.tokenize([t.text() for t in cat], stopwords="en", show_progress=False), show_progress=False)
    ranker = build_baseline(cat, BaselineConfig(), len(cat))
    for rec in ranker.run(queries):
        toks = bm25s.tokenize([rec.query.text], stopwords="en", return_ids=False, show_progress=False)[0]
        ref = model.get_scores(toks)
        assert [r["score"] for r in rec.constrained] == sorted(round(float(x), 5) for x in ref)[::-1]


def test_toolgen_bm25_config_and_ranking():
    cfg = BaselineConfig(**OmegaConf.to_container(OmegaConf.load(CONF / "bm25_toolgen.yaml")))
    assert (cfg.document, cfg.tokenizer, cfg.scorer, cfg.label) == ("toolgen", "words", "okapi", "bm25_toolgen")
    cat, queries = load_catalog(ASSETS / "tools.jsonl"), load_query_jsonl(ASSETS / "queries.jsonl")
    top = [r.constrained[0]["tool"] for r in build_baseline(cat, cfg, 3).run(queries)]
    # "Will it rain in Berlin this week?": ToolGen keeps the stopword "it", which matches the service name "Translate It"
    assert top[0] == "Weather Now&&Current weather" and top[1] == "Translate It&&Translate"
    no_stop = BaselineConfig(document="toolgen", tokenizer="bm25s_en", scorer="okapi")
    assert [r.constrained[0]["tool"] for r in build_baseline(cat, no_stop, 3).run(queries)][1].startswith("Weather Now&&")
    assert BaselineConfig(**OmegaConf.to_container(OmegaConf.load(CONF / "dense_toolgen.yaml"))).document == "toolgen"


def test_settings_are_checked_and_fingerprinted():
    with pytest.raises(ValueError, match=r"baseline.document='fields': choose from \['api_text', 'names', 'tool_text', 'toolgen'\]"):
        BaselineConfig(document="fields")
    with pytest.raises(ValueError, match="baseline.scorer='bm25l'"):
        BaselineConfig(scorer="bm25l")
    with pytest.raises(ValueError, match="apply to kind=bm25 only, not kind=dense"):
        BaselineConfig(kind="dense", tokenizer="words")
    assert BaselineConfig().identity() == {"kind": "bm25", "encoder": None}  # folders written before still resume
    assert BaselineConfig(kind="dense", document="toolgen").identity() == {"kind": "dense", "encoder": None, "document": "toolgen"}
