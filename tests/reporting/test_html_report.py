"""report.html of a real tiny evaluation, loaded in headless Chromium (Debian's ``chromium``,
installed by ``make setup-browser``; the browser tests skip, saying why, without it): the numbers
in the rendered DOM equal results.json, and the sample browser's filters (set through the URL
fragment, run by the page's own script) keep exactly the samples they should. A page over several
runs (a study's) names each bar and sample card by its run, labels whole; MCQ options shown once."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from toolsense.evaluation.runner import run
from toolsense.reporting.html_report import collect_evaluations, evaluation_labels, render, write_html_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup-browser: apt-get install chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic", "--window-size=1400,1000"]  # the 1,400 px window of issue 37


def dump_dom(page: Path, fragment: str = "") -> str:
    """The DOM after the page's scripts ran (``chromium --dump-dom``), from a fresh profile."""
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom",
                               page.resolve().as_uri() + (f"#{fragment}" if fragment else "")],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "</html>" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


class Cells(HTMLParser):
    """Every ``<td data-metric>`` of a ``<tr data-folder>``: {(folder, metric): (data-value, text)};
    and the ``div.sample`` cards in order."""

    def __init__(self):
        super().__init__()
        self.cells, self.samples, self.row, self.cell, self.text, self.depth = {}, [], None, None, "", 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-folder" in a:
            self.row = a["data-folder"]
        elif tag == "td" and self.row is not None and "data-metric" in a:
            self.cell, self.text, self.value = a["data-metric"], "", a.get("data-value")
        elif tag == "div" and "sample" in a.get("class", "").split():
            self.samples.append((a["data-id"], a["class"].split()[1]))

    def handle_data(self, data):
        if self.cell is not None:
            self.text += data

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.cells[(self.row, self.cell)] = (self.value, self.text.strip())
            self.cell = None
        elif tag == "tr":
            self.row = None


def parse(dom: str) -> Cells:
    p = Cells()
    p.feed(dom)
    return p


@pytest.fixture(scope="module")
def evaluated(tiny_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html_eval")
    run({"run": str(tiny_run), "stage": "stage2", "device": "cpu", "task": "evaluate", "parametric": True,
         "benchmarks": {"realistic": {"loader": "demo", "split": "test", "style": "short", "limit": 12},
                        "qa": {"loader": "qa", "limit": 8}},
         "baselines": {"bm25": {"kind": "bm25"}},
         "decoding": {"beam_width": 10, "batch_size": 4}, "metrics": {"ks": [1, 5, 10], "resamples": 50},
         "probe": {"modes": ["token"]}, "logger": {"kind": "none"}, "output_dir": str(out)})
    return out


def _samples(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]


def test_evaluation_writes_one_self_contained_page(evaluated):
    page = (evaluated / "report.html").read_text()
    assert not re.search(r"\b(src|href)\s*=", page) and "<link" not in page and "@import" not in page and "url(" not in page
    assert page.count("<svg") == 2  # realistic recall, probe accuracy
    data = json.loads(re.search(r'<script type="application/json" id="samples-data">(.*?)</script>', page, re.S).group(1))
    assert len(data) == 12 + 12 + 8 and {d["bench"] for d in data} == {"realistic", "qa"}


@needs_chromium
def test_numbers_in_the_rendered_dom_equal_results_json(evaluated):
    cells = parse(dump_dom(evaluated / "report.html")).cells
    checked = 0
    for folder, res in collect_evaluations(evaluated):
        rel = folder.relative_to(evaluated).as_posix()
        for metric, est in res["metrics"].items():
            if (rel, metric) not in cells:
                shown = re.match(r"^(Rc|Rf|IS|COMPc|COMPf)@\d+$|^Rprec_", metric)
                assert not shown, f"{rel} {metric} missing from the page"
                continue
            value, text = cells[(rel, metric)]
            pct = not metric.startswith("IS")
            assert float(value) == est["value"]
            assert text.split()[0] == f"{est['value'] * (100 if pct else 1):.{1 if pct else 2}f}"
            checked += 1
        assert cells[(rel, "n")][1] == str(res["n"])
    # model: Rc, Rf, IS, COMPc, COMPf at 3 ks, Rprec c / f; bm25: Rc, COMPc at 3 ks, Rprec c; qa token: accuracy
    assert checked == 5 * 3 + 2 + 2 * 3 + 1 + 1


@needs_chromium
def test_filters_keep_exactly_the_right_samples(evaluated):
    model, bm25 = _samples(evaluated / "realistic" / "model"), _samples(evaluated / "realistic" / "bm25")
    everything = parse(dump_dom(evaluated / "report.html")).samples
    assert len(everything) == 12 + 12 + 8
    # benchmark + outcome at k=1: the misses of both systems on realistic (BM25 hits some), in folder order
    shown = parse(dump_dom(evaluated / "report.html", "bench=realistic&outcome=miss&k=1")).samples
    expected = [r["item_id"] for r in bm25 + model if r["metrics"]["c_hit@1"] == 0]
    assert [i for i, _ in shown] == expected and {c for _, c in shown} == {"miss"}
    assert 0 < len(shown) < 24
    hits = parse(dump_dom(evaluated / "report.html", "bench=realistic&outcome=hit&k=5")).samples
    assert [i for i, _ in hits] == [r["item_id"] for r in bm25 + model if r["metrics"]["c_hit@5"] == 1]
    # search by a gold tool's name (lower-cased match on query, id and gold tools)
    tool = bm25[0]["gold"][0]
    found = parse(dump_dom(evaluated / "report.html", f"q={tool.split('&&')[1]}")).samples
    want = [r["item_id"] for r in bm25 + model if tool.split("&&")[1].lower() in " ".join([r["query"], r["item_id"], *r["gold"]]).lower()]
    assert [i for i, _ in found] == want and len(want) >= 2
    # tier: the probe rows carry their kind as tier
    assert len(parse(dump_dom(evaluated / "report.html", "tier=qa")).samples) == 8


def test_render_escapes_what_samples_contain(tmp_path):
    """A query holding markup and a closing script tag cannot break out of the page."""
    folder = tmp_path / "b" / "model"
    folder.mkdir(parents=True)
    res = {"benchmark": "b", "system": "s", "kind": "retrieval", "n": 1,
           "metrics": {"Rc@1": {"value": 0.0, "lo": 0.0, "hi": 0.0}}}
    (folder / "results.json").write_text(json.dumps(res))
    (folder / "samples.jsonl").write_text(json.dumps({
        "item_id": "x", "query": "</script><img onerror=alert(1)>", "gold": ["A&&b"], "tier": "1-tool",
        "constrained": [{"tool": "A&&b", "score": -1.0}], "free": [{"tool": None, "score": -2.0, "text": "<b>no</b>"}],
        "metrics": {"c_hit@1": 1.0}}) + "\n")
    page = render(collect_evaluations(tmp_path), "t")
    assert "</script><img" not in page and page.count("</script>") == 2


SYSTEM = "smollm2_135m:stage2"


def _write_eval(folder: Path, res: dict, rows: list[dict]) -> None:
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(res))
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def two_runs(tmp_path) -> Path:
    """A study-like tree: runs grid/0_tg and grid/1_tg_h (each with its config.yaml), each evaluated
    as the same system on one retrieval benchmark and one MCQ probe (options shown in one order)."""
    for run_name, hit in (("0_tg", 1.0), ("1_tg_h", 0.0)):
        run_dir = tmp_path / "grid" / run_name
        _write_eval(run_dir / "eval" / "realistic" / "model",
                    {"benchmark": "realistic", "system": SYSTEM, "kind": "retrieval", "n": 1,
                     "metrics": {"Rc@1": {"value": hit, "lo": 0.0, "hi": 1.0}}},
                    [{"item_id": "q1", "query": "weather", "gold": ["A&&b"], "tier": "easy",
                      "constrained": [{"tool": "A&&b", "score": -1.0}], "free": None, "metrics": {"c_hit@1": hit}}])
        _write_eval(run_dir / "eval" / "mcq" / "token",
                    {"benchmark": "mcq", "system": "token", "kind": "mcq", "n": 1, "chance": 0.25,
                     "metrics": {"accuracy": {"value": hit, "lo": 0.0, "hi": 1.0}}},
                    [{"item_id": "m1", "question": "What does it do?", "tool": "A&&b", "gold": "B", "pred": "B" if hit else "C",
                      "correct": bool(hit), "options_shown": ["base", "other", "third", "fourth"], "permutation": [3, 0, 1, 2]}])
        (run_dir / "config.yaml").write_text("experiment: tg\n")
    return tmp_path


def test_bars_of_several_runs_are_named_by_their_run_and_drawn_whole(two_runs):
    """Every run's model is smollm2_135m:stage2: the bars say which run (the old page cut each
    label to its last 14 characters, the same string for every configuration)."""
    evaluations = collect_evaluations(two_runs)
    page = render(evaluations, "t")
    groups = re.findall(r'<text class="group"[^>]*>([^<]*)</text>', page)
    assert groups == [f"0_tg · {SYSTEM}", f"1_tg_h · {SYSTEM}", "mcq/0_tg · token", "mcq/1_tg_h · token"]
    assert 'transform="rotate(30' in page  # wider than their bar groups: slanted, not cut
    # one run's evaluations keep their systems' names; two folders of one benchmark and system, their folders
    run_dir = two_runs / "grid" / "0_tg"
    assert evaluation_labels(collect_evaluations(run_dir), run_dir) == ["token", SYSTEM]
    shutil.copytree(run_dir / "eval", run_dir / "eval_again")
    assert evaluation_labels(collect_evaluations(run_dir), run_dir) == [
        "eval/mcq/token", "eval/realistic/model", "eval_again/mcq/token", "eval_again/realistic/model"]


@needs_chromium
def test_cards_name_their_run_and_show_each_mcq_option_once(two_runs):
    page = write_html_report(two_runs)
    cards = dump_dom(page).split('<div id="samples">')[1].split("<script")[0]  # the cards the page's script drew
    heads = re.findall(r'<div class="head">([^<]*)</div>', cards)
    assert heads == ["mcq · 0_tg · token · tier mcq · m1", f"realistic · 0_tg · {SYSTEM} · tier easy · q1",
                     "mcq · 1_tg_h · token · tier mcq · m1", f"realistic · 1_tg_h · {SYSTEM} · tier easy · q1"]
    # "A. A. base" was an <ol type="A"> whose items also began with their letter: the letter is drawn once
    lists = re.findall(r'<(ul|ol) class="opts"[^>]*>(.*?)</\1>', cards)
    assert [tag for tag, _ in lists] == ["ul", "ul"]
    assert re.findall(r"<li[^>]*>([^<]*)</li>", lists[0][1]) == ["A. base", "B. other", "C. third", "D. fourth"]
