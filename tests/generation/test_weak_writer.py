"""Garbage from a weak writer that a weak judge accepted (issue 21: Qwen2.5-Coder-0.5B through the
local server wrote and judged these) is refused by code: an MCQ "question" that is a statement
with a tool name as its answer and "this tool" as a distractor, QA "What does ..." questions
answered Yes/No, and RRB queries that copy a few-shot example."""

import pytest

from tests.generation.scripted import HandLLM
from toolsense.catalog import Catalog, Tool
from toolsense.generation.checks import catalog_names, check_mcq, check_qa, copies_example, question_form, yes_no_form
from toolsense.generation.config import GenerateConfig
from toolsense.generation.dedupe import QuestionDeduper
from toolsense.generation.probes import make_mcq_item, make_qa_item
from toolsense.generation.rrb import RRBTask, make_rrb_item

GEO = "Geolocation utilities: IP lookup, elevation, reverse geocoding and coordinates for any place."
ELEVATION = Tool.from_name("GeoLocate&&elevation", tool_title="GeoLocate", tool_description=GEO, api_title="elevation",
                           api_description="Returns the elevation above sea level in metres for a latitude/longitude pair.",
                           category="Mapping")
IP = Tool.from_name("GeoLocate&&ip_geolocation", tool_title="GeoLocate", tool_description=GEO, api_title="ip_geolocation",
                    api_description="Estimates the geographic location (country, city, coordinates) of an IPv4 or IPv6 address.",
                    category="Mapping")
SHORT = Tool.from_name("LinkKit&&expand_url", tool_title="LinkKit", tool_description="URL utilities: shorten, expand, QR codes.",
                       api_title="expand_url", api_description="Expands a short link to the long URL it redirects to.",
                       category="Tools")
CATALOG = Catalog([ELEVATION, IP, SHORT])
NAMES = catalog_names(CATALOG)

# the accepted MCQ item of the issue, verbatim in its parts
STATEMENT_ITEM = {"question": "This tool estimates the geographic location (country, city, coordinates) of an IPv4 or IPv6 address.",
                  "correct_answer": "GeoLocate / ip_geolocation",
                  "wrong_answers": ["this tool", "Returns a weather forecast for a city", "Converts an amount between currencies"]}
QUESTION = "What does this tool return for a latitude and longitude?"


def test_the_accepted_mcq_item_is_refused_for_each_of_its_faults():
    assert check_mcq(STATEMENT_ITEM, ELEVATION, NAMES) == "question is a statement, not a question"
    asked = {**STATEMENT_ITEM, "question": QUESTION}  # a real question: the answer is still another tool's name
    assert check_mcq(asked, ELEVATION, NAMES) == "an option is a tool name, not an answer about the tool"
    assert check_mcq({**asked, "correct_answer": "ip_geolocation"}, ELEVATION, NAMES) == \
        "an option is a tool name, not an answer about the tool"  # the API id alone too
    answered = {**asked, "correct_answer": "Its elevation above sea level in metres"}
    assert check_mcq(answered, ELEVATION, NAMES) == "an option only refers to the tool ('this tool')"
    for self_ref in ("This tool.", "the API", "None of the above"):
        assert check_mcq({**answered, "wrong_answers": [self_ref, "A city name", "A currency rate"]}, ELEVATION, NAMES) == \
            "an option only refers to the tool ('this tool')"
    echo = {**answered, "wrong_answers": ["what does this tool return for a latitude and longitude", "A city name", "A rate"]}
    assert check_mcq(echo, ELEVATION, NAMES) == "an option repeats the question"
    good = {**answered, "wrong_answers": ["The city of an IP address", "A weather forecast", "A currency exchange rate"]}
    assert check_mcq(good, ELEVATION, NAMES) is None
    # the card supports the gold where code can tell: no content word of the card in the answer
    assert check_mcq({**good, "correct_answer": "Hotel prices for chosen dates"}, ELEVATION, NAMES) == \
        "the tool card does not support the correct answer (no content word in common)"


def test_the_accepted_qa_items_are_not_yes_no_questions():
    assert check_qa({"question": "What does the tool return when it links a short link to a long URL?", "answer": "Yes"},
                    SHORT, "Yes") == "not a yes/no question (it must start with an auxiliary verb: Does, Is, Can, ...)"
    assert check_qa({"question": "What does the tool do that doesn't involve full-text search?", "answer": "No"},
                    SHORT, "No") == "not a yes/no question (it must start with an auxiliary verb: Does, Is, Can, ...)"
    assert check_qa({"question": "Does this tool expand a short link to its long URL?", "answer": "Yes"}, SHORT, "Yes") is None
    assert check_qa({"question": "Given a short link, can this tool tell where it redirects?", "answer": "Yes"}, SHORT, "Yes") is None


@pytest.mark.parametrize("question, yes_no, is_question", [
    ("Does this tool need an API key?", True, True),
    ("Is it able to return the elevation?", True, True),
    ("Will this tool work offline?", True, True),
    ("What does this tool return?", False, True),
    ("Which input does this tool need?", False, True),
    ("For a given city, what does this tool return?", False, True),
    ("This tool returns the elevation.", False, False),
    ("This tool returns the elevation?", False, False),
    ("Returns the elevation", False, False),
])
def test_question_forms(question, yes_no, is_question):
    assert yes_no_form(question) is yes_no
    assert question_form(question) is is_question


def test_writer_items_through_make_mcq_and_make_qa_are_refused():
    """The same items as LLM replies, through the item makers (the judge would have accepted them)."""
    judge = HandLLM(mcq_judge=[{"answer": "A"}] * 3, qa_judge=[{"answer": "Yes"}] * 3)
    writer = HandLLM(mcq_writer=[STATEMENT_ITEM])
    class Near:  # the catalog here is hand-made: its neighbours are the other two tools
        def nearest(self, name, k):
            return [t.name for t in CATALOG if t.name != name][:k]
    item, reason, trace = make_mcq_item(ELEVATION, CATALOG, Near(), writer, judge, 0.7, 0, 0, QuestionDeduper(None, 0.9))
    assert item is None and reason == "question is a statement, not a question" and "judge_replies" not in trace
    writer = HandLLM(qa_writer=[{"question": "What does the tool return when it links a short link to a long URL?", "answer": "Yes"}])
    item, reason, _ = make_qa_item(SHORT, "Yes", writer, judge, 0.7, 0, QuestionDeduper(None, 0.9))
    assert item is None and reason.startswith("not a yes/no question")
    assert judge.prompts == {}  # the judge was never asked


SHOTS = [e for tier in ("easy", "medium", "hard") for e in getattr(GenerateConfig().few_shot, tier)]


@pytest.mark.parametrize("query, copied", [
    ("Show me the most recently posted job openings", SHOTS[0]),  # verbatim
    ("show me the most recently posted job openings!!", SHOTS[0]),  # case and punctuation
    ("Show me the most recently posted job openings in Lisbon", SHOTS[0]),  # a near-copy: two words added
    ("Show me the most recent job openings", SHOTS[0]),
    ("What's the weather going to be like in Porto tomorrow?", SHOTS[1]),  # only the city changed
    ("Convert 250 euros to US dollars", None),
    ("How cold will it be in Madrid on Sunday?", None),
    ("Find flats near the centre of Berlin for next month", None),
])
def test_near_copies_of_few_shot_examples(query, copied):
    assert copies_example(query, SHOTS) == copied


def test_rrb_writer_copying_a_few_shot_example_is_rejected(demo_catalog, nb):
    anchor = "SkyCast Weather&&current_weather"
    task = RRBTask("rrb-easy-00000", "easy", anchor, [anchor] + nb.nearest(anchor, 13))
    near_copy = "What's the weather going to be like in Oslo tomorrow?"
    item, reason, _ = make_rrb_item(task, demo_catalog, HandLLM(rrb_writer=[{"query": near_copy, "tools": [1]}]), None, set(),
                                    GenerateConfig(), 0)
    assert item is None and reason == "query copies a few-shot example"
    item, reason, _ = make_rrb_item(task, demo_catalog, HandLLM(rrb_writer=[{"query": "Is it raining in Oslo at the moment?",
                                                                             "tools": [1]}]), None, set(), GenerateConfig(), 0)
    assert reason is None and item["gold"] == [anchor]
