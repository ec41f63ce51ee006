"""The README stays a front door and no page of the documentation points at a file that is not there.

The README is held to 9 KiB (issue 36: what toolsense is, the two commands, one small result, the
comparison page's screenshot (issue 37), where to go next; results and their discussion live in
``docs/reports/results.md``). Every relative link and image of the top-level pages and of
``docs/**/*.md`` must name an existing file once resolved against the page's own folder; anchors
(``#...``) are not checked, web addresses are skipped. Links
inside fenced code blocks are code, not links, and are skipped too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_BYTES = 9 * 1024
PAGES = sorted([ROOT / n for n in ("README.md", "ARCHITECTURE.md", "DEVELOPERS.md", "CHANGELOG.md")
                if (ROOT / n).is_file()] + list((ROOT / "docs").rglob("*.md")))
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, ...


def relative_links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every relative link or image in Markdown ``text``, its anchor dropped;
    fenced blocks and inline code spans are blanked first (line numbers kept)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            path = target.split("#", 1)[0]
            if path and not EXTERNAL.match(path):
                out.append((n, path))
    return out


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """``page:line: target`` of each relative link of ``page`` naming no existing file."""
    links = relative_links(page.read_text(encoding="utf-8"))
    name = page.relative_to(root).as_posix()
    return [f"{name}:{n}: {target}" for n, target in links if not (page.parent / target).exists()]


def test_readme_is_a_front_door():
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes, over {README_MAX_BYTES}: move detail to docs/"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text
    assert "docs/reports/results.md" in text
    assert "](docs/guides/img/compare_report.png)" in text  # issue 37: the README shows the comparison page


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path):
    assert broken_links(page) == []


def test_the_link_checker_sees_links_and_only_links(tmp_path):
    text = ("See [a](a.md#x), ![img](img/p.png \"t\"), [web](https://x.io/y.md), [top](#anchor).\n"
            "`[not](code.md)`\n```bash\n[nor](fenced.md)\n```\n[b](../b.md)\n")
    assert relative_links(text) == [(1, "a.md"), (1, "img/p.png"), (6, "../b.md")]
    (tmp_path / "a.md").write_text("")
    page = tmp_path / "docs" / "p.md"
    page.parent.mkdir()
    page.write_text("[gone](gone.md) [up](../a.md)\n")
    assert broken_links(page, tmp_path) == ["docs/p.md:1: gone.md"]
