"""paper/full_catalog.py (the study report's full-catalog section): a study's BM25 ranked again over a
larger catalog (here the 126-tool demo catalog standing in for the 46,984-tool one), cached per
benchmark file hash, resumed from the cache, refused on a changed benchmark file, and packed into
the archive."""

from __future__ import annotations

import json
import tarfile

import pytest

from toolsense.catalog import Catalog, load_query_jsonl
from toolsense.catalog.loaders import DEMO_DIR, load_demo_catalog
from toolsense.conduct.archive import archive_results
from toolsense.paper.full_catalog import CACHE, full_catalog_baselines, full_catalog_section
from toolsense.utils.io import sha256_file


class Grid:
    """The two lookups full_catalog reads of a Sweep: the BM25 row and the results.json behind a cell."""

    def __init__(self, results: str):
        self.results = results

    def baseline(self, kind: str) -> str | None:
        return "bm25" if kind == "bm25" else None

    def sources(self, row: str, col: str) -> dict[int, str]:
        return {0: self.results} if col == "standard Rc@5" else {}

    def cell(self, row: str, col: str) -> dict:
        return {"value": 1.0, "lo": 1.0, "hi": 1.0}


@pytest.fixture
def study(tmp_path):
    bench_file = tmp_path / "queries.jsonl"
    bench_file.write_text((DEMO_DIR / "queries.jsonl").read_text())
    section = {"loader": "query_jsonl", "path": str(bench_file), "label": "standard", "split": "test",
               "style": "verbose"}
    results = tmp_path / "root/grid/0_tg-lora/eval/standard/bm25/results.json"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"n": 1, "hashes": {"benchmark_sha256": sha256_file(bench_file)}, "config": {
        "benchmarks": {"standard": section}, "baselines": {"bm25": {"kind": "bm25", "label": "bm25"}}}}))
    return tmp_path, bench_file, Grid(str(results))


def test_ranked_over_a_larger_catalog_cached_by_the_benchmark_hash(study):
    tmp_path, bench_file, grid = study
    full = load_demo_catalog()
    queries = [q for q in load_query_jsonl(bench_file, "test") if q.style == "verbose"]
    gold = {t for q in queries for t in q.tools}
    kept = [t for t in full if t.name != queries[0].tools[0]]  # one gold tool absent: its queries are left out, counted
    small = Catalog(kept)
    none = tmp_path / "none"  # no catalog file: the catalog is what load gives
    rows = full_catalog_baselines(grid, 5, tmp_path / "root", 100, load=lambda: small, catalog_file=none, ks=(5, 200))
    r = rows["standard"]
    missing = sum(queries[0].tools[0] in q.tools for q in queries)
    assert r["dropped"] == missing and r["scored"] == len(queries) - missing and r["tools"] == len(kept)
    assert r["gold_tools"] == len(gold) - 1
    assert r["full"]["Rc@200"]["value"] == 1.0  # the whole catalog ranked: every scored query finds its gold
    assert 0 < r["full"]["Rc@5"]["value"] < 1.0
    [cached] = (tmp_path / "root" / CACHE).iterdir()
    assert cached.name.startswith(f"standard.{sha256_file(bench_file)[:16]}.bm25-")

    def fail():
        raise AssertionError("the cache should have answered")
    again = full_catalog_baselines(grid, 5, tmp_path / "root", 100, load=fail, catalog_file=none, ks=(5, 200))
    assert again["standard"]["full"] == r["full"]
    text = full_catalog_section({"BM25": rows, "Dense (MiniLM)": {"standard": {"why": "not encoded"}}}, 5)
    assert f"| BM25 | standard | 100.0% [100.0, 100.0] | {100 * r['full']['Rc@5']['value']:.1f}%" in text
    assert f"{len(kept):,} tools" in text
    assert f"standard {len(gold) - 1} gold + {len(kept) - len(gold) + 1} distractors" in text
    assert "Dense (MiniLM) on standard: not encoded" in text

    n = archive_results(tmp_path / "root", tmp_path / "a.tar.xz")  # the cache travels with the results
    with tarfile.open(tmp_path / "a.tar.xz") as tar:
        assert f"root/{CACHE}/{cached.name}" in tar.getnames() and n == 2


def test_a_changed_benchmark_file_is_refused_not_ranked(study):
    tmp_path, bench_file, grid = study
    none = tmp_path / "none"
    bench_file.write_text(bench_file.read_text() + "\n")
    rows = full_catalog_baselines(grid, 5, tmp_path / "root", 100, load=load_demo_catalog, catalog_file=none)
    assert "differs from the one the study evaluated (sha256)" in rows["standard"]["why"]
    bench_file.unlink()
    rows = full_catalog_baselines(grid, 5, tmp_path / "root", 100, load=load_demo_catalog, catalog_file=none)
    assert "is not on this machine" in rows["standard"]["why"]
