"""compare.py's report.html, loaded in headless Chromium (``make setup-browser``; skipped, saying
why, without it): one row per configuration with seeds pooled and counted, every number in the
DOM equal to comparison.json, the significance superscripts and legend and Cohen's d of
comparison.md, the plots embedded, chance per probe type, the page within 1,400 px, and the
per-query side-by-side filters keeping exactly the right items, each configuration's column naming
its runs. (MCQ options shown once: the evaluation page's test, test_html_report.py.)"""

from __future__ import annotations

import json
import random
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.reporting.test_html_report import dump_dom, needs_chromium
from toolsense.comparison.compare import HEADLINE, CompareConfig, report_notes, run_compare
from toolsense.reporting.compare_report import column_groups, query_records, source_folders, write_comparison_report

TOOLS = [f"Svc{i}&&api{i}" for i in range(30)]
N = 24


def _write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def _samples(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _retrieval(folder: Path, src: dict, system: str, skill: float, rng: random.Random) -> None:
    """A retrieval evaluation of N queries whose gold tool sits at rank 1 with prob. ``skill``."""
    rows = []
    for i in range(N):
        gold = TOOLS[i % len(TOOLS)]
        others = [t for t in TOOLS if t != gold]
        rng.shuffle(others)
        r = rng.random()
        rank = 0 if r < skill else (3 if r < skill + 0.2 else None)
        ranking = others[:10] if rank is None else others[:rank] + [gold] + others[rank:9]
        hit = {k: float(gold in ranking[:k]) for k in (1, 5)}
        rows.append({"item_id": f"q{i}", "query": f"query number {i}", "gold": [gold], "tier": "easy" if i % 2 else "hard",
                     "constrained": [{"tool": t, "score": -0.1 * j, "logprob": -0.1 * j} for j, t in enumerate(ranking)],
                     "free": None, "metrics": {"c_hit@1": hit[1], "c_hit@5": hit[5], "f_hit@1": hit[1], "f_hit@5": hit[5]}})
    _samples(folder / "samples.jsonl", rows)
    mean = lambda k: sum(r["metrics"][f"c_hit@{k}"] for r in rows) / N  # noqa: E731
    _write(folder / "results.json", {"benchmark": "realistic", "system": system, "kind": "retrieval", "source": src, "n": N,
                                     "metrics": {f"{m}@{k}": {"value": mean(k), "lo": 0.0, "hi": 1.0}
                                                 for m in ("Rc", "Rf") for k in (1, 5)}})


def _probe(folder: Path, src: dict, kind: str, skill: float, rng: random.Random, mode: str = "token") -> None:
    letters = ["A", "B", "C", "D"] if kind == "mcq" else ["Yes", "No"]
    rows = []
    for i in range(12):
        gold = letters[i % len(letters)]
        pred = gold if rng.random() < skill else letters[(i + 1) % len(letters)]
        rows.append({"item_id": f"{kind}{i}", "question": f"{kind} question {i}", "tool": TOOLS[i], "gold": gold, "pred": pred,
                     "correct": pred == gold, "options_shown": ["base", "other", "third", "fourth"][:len(letters)],
                     "permutation": list(range(len(letters)))})
    _samples(folder / "samples.jsonl", rows)
    acc = sum(r["correct"] for r in rows) / len(rows)
    _write(folder / "results.json", {"benchmark": kind, "system": mode, "mode": mode, "kind": kind, "source": src, "n": len(rows),
                                     "chance": 0.25 if kind == "mcq" else 0.5,
                                     "metrics": {"accuracy": {"value": acc, "lo": 0.0, "hi": 1.0}}})


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Path:
    """Three runs — tg with seeds 0 and 1 (one configuration), tg_h with one seed — each with a
    retrieval benchmark and MCQ / QA probes, and BM25; compared by compare.py."""
    root = tmp_path_factory.mktemp("cmp")
    rng = random.Random(0)
    for name, exp, builder, seed, skill in (("0_tg", "tg", "flat", 0, 0.7), ("1_tg", "tg", "flat", 1, 0.6),
                                            ("2_tg_h", "tg_h", "clustered", 0, 0.2)):
        run = root / "sweep" / name
        run.mkdir(parents=True)
        (run / "config.yaml").write_text(f"experiment: {exp}\ntuning:\n  method: lora\nindex:\n  builder: {builder}\n"
                                         f"trainer:\n  seed: {seed}\n")
        src = {"run": str(run), "stage": "stage2", "model": "tiny_random"}
        _retrieval(run / "eval" / "realistic" / "model", src, "tiny_random:stage2", skill, rng)
        _probe(run / "eval" / "mcq" / "token", src, "mcq", skill, rng)
        _probe(run / "eval" / "qa" / "token", src, "qa", skill, rng)
    _retrieval(root / "sweep" / "0_tg" / "eval" / "realistic" / "bm25", {"baseline": {"kind": "bm25"}}, "bm25", 0.5, rng)
    run_compare(CompareConfig(roots=[str(root / "sweep")], metrics=["Rc@1", "Rc@5"], resamples=200), root / "out")
    return root / "out"


class Dom(HTMLParser):
    """Cells ``{(row, col): attrs + text}``, query cards, images, legend texts and the body's data."""

    def __init__(self):
        super().__init__()
        self.cells, self.items, self.images, self.body, self.texts = {}, [], [], {}, {}
        self.cell, self.buf, self.grab = None, "", None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "td" and "data-col" in a:
            self.cell, self.buf = a, ""
        elif tag == "div" and a.get("class") == "item":
            self.items.append((a["data-bench"], a["data-id"]))
        elif tag == "img":
            self.images.append(a["src"][:22])
        elif tag == "p" and a.get("id") in ("legend", "cohens-d"):
            self.grab, self.buf = a["id"], ""

    def handle_data(self, data):
        if self.cell is not None or self.grab is not None:
            self.buf += data

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.cells[(self.cell["data-row"], self.cell["data-col"])] = {**self.cell, "text": self.buf.strip()}
            self.cell = None
        elif tag == "p" and self.grab is not None:
            self.texts[self.grab], self.grab = self.buf.strip(), None


def _dom(page: Path, fragment: str = "") -> Dom:
    d = Dom()
    d.raw = dump_dom(page, fragment)
    d.feed(d.raw)
    assert d.body.get("data-ready") == "1"
    return d


def test_the_page_has_no_chart_of_flat_folders_but_one_row_per_configuration(compared):
    comp = json.loads((compared / "comparison.json").read_text())
    assert comp["rows"] == ["tg-lora", "tg_h-lora", "bm25"]  # seeds 0 and 1 of tg are one configuration
    assert list(column_groups(comp["columns"])) == ["realistic", "mcq token", "qa token"]
    page = (compared / "report.html").read_text()
    assert "<svg" not in page  # the evaluation page's SVG bars over folders are not drawn here
    assert page.count("data:image/png;base64,") == len(comp["plots"]) >= 2


@needs_chromium
def test_dom_numbers_equal_comparison_json(compared):
    comp = json.loads((compared / "comparison.json").read_text())
    notes = report_notes(comp)
    dom = _dom(compared / "report.html")
    checked = 0
    for row in comp["rows"]:
        for col in comp["columns"]:
            est, cell = comp["cells"][row].get(col), dom.cells[(row, col)]
            if not est or est.get("value") is None:
                assert cell["text"] == "—"
                continue
            assert float(cell["data-value"]) == est["value"]  # repr round-trips the exact float
            for key in ("lo", "hi", "sd"):
                assert (cell[f"data-{key}"] == "") == (est.get(key) is None)
                if est.get(key) is not None:
                    assert float(cell[f"data-{key}"]) == est[key]
            s = 1 if col.endswith(("IS@1", "IS@5")) else 100
            assert cell["text"].startswith(f"{est['value'] * s:.1f}")
            assert notes["markers"][row][col].strip() in cell["text"]
            checked += 1
    assert checked == 3 * 4 - 2  # bm25 has no probe cells
    assert dom.cells[("tg-lora", "seeds")]["data-value"] == "2" and dom.cells[("tg_h-lora", "seeds")]["data-value"] == "1"
    assert dom.cells[("bm25", "seeds")]["data-value"] == ""
    tg = comp["cells"]["tg-lora"]["realistic Rc@1"]
    assert tg["sd"] is not None and f"± {tg['sd'] * 100:.1f}" in dom.cells[("tg-lora", "realistic Rc@1")]["text"]
    # chance per probe type: 25 beside the MCQ accuracy, 50 beside the QA one
    assert "chance 25" in dom.cells[("tg-lora", "mcq token acc")]["text"]
    assert "chance 50" in dom.cells[("tg-lora", "qa token acc")]["text"]
    sig = comp["statistics"]["significance"]
    assert dom.texts["legend"].startswith("Significance: a superscript names the rows") and "a = tg-lora" in dom.texts["legend"]
    assert any(t["significant"] for t in sig["tests"])  # a marker is really drawn somewhere
    assert any(m.strip() for r in notes["markers"].values() for m in r.values())
    assert int(dom.body["data-scroll-width"]) <= 1400


@needs_chromium
def test_side_by_side_filters_keep_exactly_the_right_items(compared):
    comp = json.loads((compared / "comparison.json").read_text())
    records = query_records(source_folders(comp), [1, 5])
    assert len(records) == N + 12 + 12 and set(records[0]["sys"]) >= {"tg-lora", "tg_h-lora"}
    tg = next(r for r in records if r["id"] == "q0")["sys"]["tg-lora"]
    assert len(tg["hits"]["1"]) == 2 and tg["run"] == "sweep/0_tg, sweep/1_tg"  # both seeds, named by their runs

    def expect(bench, a, b, k, tier=None):
        out = []
        for r in records:
            ha, hb = r["sys"].get(a, {}).get("hits", {}).get(k), r["sys"].get(b, {}).get("hits", {}).get(k)
            if r["bench"] == bench and (tier is None or r["tier"] == tier) and ha and hb and all(ha) and not any(hb):
                out.append(r["id"])
        return out

    for k in ("1", "5"):
        want = expect("realistic", "tg-lora", "tg_h-lora", k)
        dom = _dom(compared / "report.html", f"bench=realistic&a=tg-lora&b=tg_h-lora&outcome=A+right%2C+B+wrong&k={k}")
        assert [i for _, i in dom.items] == want and want
        # each drawn column says how many seeds hit and which runs they are
        for row, runs, seeds in (("tg-lora", "sweep/0_tg, sweep/1_tg", 2), ("tg_h-lora", "sweep/2_tg_h", 1)):
            shown = re.findall(rf'<div data-sys="{row}"><div class="sys">{row}</div><div class="[a-z]*">hit in (\d) of {seeds} '
                               rf'seeds? \({runs}\)</div>', dom.raw)
            assert len(shown) == len(want)
    want = expect("realistic", "tg-lora", "tg_h-lora", "5", tier="hard")
    dom = _dom(compared / "report.html", "bench=realistic&tier=hard&a=tg-lora&b=tg_h-lora&outcome=A+right%2C+B+wrong&k=5")
    assert [i for _, i in dom.items] == want and 0 < len(want) < N
    dom = _dom(compared / "report.html", "bench=mcq&a=tg-lora&b=tg_h-lora&outcome=A+right%2C+B+wrong&k=1")
    assert [i for _, i in dom.items] == expect("mcq", "tg-lora", "tg_h-lora", "1")


@pytest.fixture(scope="module")
def three_modes(tmp_path_factory) -> Path:
    """Two runs of tg (seeds 0, 1), each with the MCQ probe in three modes — token (skill 0.2), control (0.6), card
    (1.0: every answer right) — and a retrieval benchmark; compared by compare.py."""
    root = tmp_path_factory.mktemp("modes")
    rng = random.Random(1)
    for name, seed in (("0_tg", 0), ("1_tg", 1)):
        run = root / "sweep" / name
        run.mkdir(parents=True)
        (run / "config.yaml").write_text(f"experiment: tg\ntuning:\n  method: lora\ntrainer:\n  seed: {seed}\n")
        src = {"run": str(run), "stage": "stage2", "model": "tiny_random"}
        _retrieval(run / "eval" / "realistic" / "model", src, "tiny_random:stage2", 0.5, rng)
        for mode, skill in (("token", 0.2), ("control", 0.6), ("card", 1.0)):
            _probe(run / "eval" / "mcq" / mode, src, "mcq", skill, rng, mode=mode)
    run_compare(CompareConfig(roots=[str(root / "sweep")], metrics=["Rc@1"], resamples=200), root / "out")
    return root / "out"


def test_probe_cards_count_the_runs_of_one_mode(three_modes):
    """2 runs × 3 modes: a probe item's card is per mode, and counts that mode's 2 runs (one card over all modes
    read "hit in 0 of 6 seeds"); the page has a mode filter listing the three."""
    comp = json.loads((three_modes / "comparison.json").read_text())
    records = [r for r in query_records(source_folders(comp), [1]) if r["kind"] == "mcq"]
    assert len(records) == 12 * 3 and sorted({r["mode"] for r in records}) == ["card", "control", "token"]
    for r in records:
        entry = r["sys"]["tg-lora"]
        assert entry["seeds"] == 2 and len(entry["hits"]["1"]) == 2 and entry["run"] == "sweep/0_tg, sweep/1_tg"
    assert all(r["sys"]["tg-lora"]["hits"]["1"] == [1, 1] for r in records if r["mode"] == "card")
    page = (three_modes / "report.html").read_text()
    assert re.search(r'<select id="f-mode"><option value="">all</option><option value="card">card</option>'
                     r'<option value="control">control</option><option value="token">token</option></select>', page)


@needs_chromium
def test_the_mode_filter_keeps_one_modes_cards(three_modes):
    """?mode=card: the 12 MCQ items once each, every card in card mode, each column "hit in 2 of 2 seeds"."""
    dom = _dom(three_modes / "report.html", "bench=mcq&mode=card")
    assert len(dom.items) == 12 and len(set(dom.items)) == 12
    assert dom.raw.count('data-mode="card"') == 12 and 'data-mode="token"' not in dom.raw
    assert re.findall(r'hit in (\d) of (\d) seeds?', dom.raw) == [("2", "2")] * 12
    assert "mcq · card mode" in dom.raw
    everything = _dom(three_modes / "report.html", "bench=mcq")
    assert len(everything.items) == 36 and not re.search(r"of [3-9] seeds", everything.raw)


@needs_chromium
def test_a_grid_shaped_comparison_fits_a_1400_px_window(tmp_path):
    """The real-tools grid's shape at compare.py's default columns: six configurations, two
    benchmarks and a benchmark's three tiers of Rc/Rf/IS@50, every cell with its superscripts, SD
    and interval. The nine-column tier table is the widest (about 1,320 px with each interval under
    its value; on one line it would need horizontal scrolling, the defect of issue 37)."""
    rows = ["tg-lora", "tg-lora:stage1", "tg_h-lora", "tg_h-lora:stage1", "bm25", "dense"]
    cols = ([f"{b} {m}" for b in ("realistic", "standard") for m in HEADLINE]
            + [f"realistic [{tier}] {m}" for tier in ("easy", "hard", "medium") for m in HEADLINE])
    est = {"value": 0.751, "lo": 0.704, "hi": 0.799, "sd": 0.015, "n_seeds": 2}
    comp = {"rows": rows, "columns": cols, "cells": {r: dict.fromkeys(cols, est) for r in rows}, "baselines": ["bm25", "dense"]}
    notes = {"letters": {r: "abcdef"[i] for i, r in enumerate(rows)}, "markers": {r: dict.fromkeys(cols, "bcd") for r in rows}}
    dom = _dom(write_comparison_report(comp, tmp_path / "report.html", notes))
    assert len(dom.cells) == len(rows) * (len(cols) + 1)  # every cell drawn (and the seeds column)
    assert int(dom.body["data-scroll-width"]) <= 1400


def test_each_probe_gets_its_own_chance_line_in_the_evaluation_page():
    """report.html's probe plot dashes chance over each probe's bar: 25% for an MCQ, 50% for a QA
    probe (one 25% line across both was wrong for the QA bars)."""
    from toolsense.reporting.html_report import plots

    est = {"value": 0.6, "lo": 0.4, "hi": 0.8}
    svg = plots([{"kind": "mcq", "benchmark": "mcq", "system": "token", "metrics": {"accuracy": est}},
                 {"kind": "qa", "benchmark": "qa", "system": "token", "metrics": {"accuracy": est}},
                 {"kind": "qa", "benchmark": "qa2", "system": "token", "chance": 0.4, "metrics": {"accuracy": est}}])
    assert re.findall(r'data-chance="([0-9.]+)"', svg) == ["0.25", "0.5", "0.4"]
