"""Metric keys come from the registry (toolsense/metrics/registry.py): outside ``toolsense/metrics/`` no Python
file of the package spells one as a literal; it derives it (``METRICS.key("Rc", k)``, ``METRICS.item_key(...)``),
so renaming a metric renames it everywhere at once.

A *metric literal* is a string constant or f-string (each ``{...}`` read as ``7``: ``f"Rc@{k}"`` reads
``Rc@7``) that is, as a whole,

- a results.json key a registration spells (``Rc@5``, ``IS@50``, ``COMPc@10``, ``Rprec_c``: ``METRICS.parse``),
- a samples.jsonl key of one item (``c_hit@5``, ``f_rprec``: ``{c,f}_`` + a registered name), or
- a comparison column ``<label> <key>`` (``f"{bench} Rc@{k}"``, ``"realistic IS@5"``: compare.result_columns).

Prose is left alone: docstrings, and a key inside a longer message or header (``f"Rc@{k} fell by ..."``)
only reads a number out to a person. Names no registration spells (the paper page's ``NDCG@5`` and
``ToolGen NDCG@5`` labels, ``accuracy``) are not metric keys. YAML configs and docs keep their literals."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from toolsense.metrics.registry import METRICS

PACKAGE = Path(__file__).resolve().parents[1] / "toolsense"


def _text(node: ast.Constant | ast.JoinedStr) -> str:
    if isinstance(node, ast.Constant):
        return node.value
    return "".join(v.value if isinstance(v, ast.Constant) else "7" for v in node.values)


def is_metric_literal(text: str) -> bool:
    names = "|".join(re.escape(m.name) for m in METRICS)
    label, _, last = text.rpartition(" ")
    return (METRICS.parse(text) is not None or re.fullmatch(rf"[cf]_(?:{names})(?:@[0-9]+)?", text) is not None
            or (bool(label) and " " not in label and METRICS.parse(last) is not None))


def _strings(tree: ast.Module) -> list[ast.Constant | ast.JoinedStr]:
    """Every string constant and f-string of ``tree`` but docstrings (any bare string statement) and an f-string's parts."""
    bodies = [b for n in ast.walk(tree) if isinstance(b := getattr(n, "body", None), list)]
    skip = {id(s.value) for body in bodies for s in body if isinstance(s, ast.Expr)}
    skip |= {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    return [n for n in ast.walk(tree) if id(n) not in skip
            and (isinstance(n, ast.JoinedStr) or isinstance(n, ast.Constant) and isinstance(n.value, str))]


def metric_literals(root: Path) -> list[str]:
    """``path:line: 'text'`` of every metric literal in the ``.py`` files under ``root`` outside ``metrics/``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith("metrics/"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            out += [(rel, n.lineno, n.col_offset, text) for n in _strings(tree) if is_metric_literal(text := _text(n))]
    return [f"{rel}:{line}: {text!r}" for rel, line, _, text in sorted(out)]


def test_no_metric_key_is_spelled_outside_the_metrics_room():
    found = metric_literals(PACKAGE)
    assert not found, (f"{len(found)} metric keys spelled as literals (derive them: METRICS.key('Rc', k), "
                       "METRICS.item_key('Rc', k); metrics/registry.py):\n" + "\n".join(found))


def test_the_checker_names_each_key_and_leaves_prose(tmp_path):
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "own.py").write_text('HEADLINE = "Rc@50"\n')  # the registry's room may spell them
    (tmp_path / "a.py").write_text(
        '"""Module docstring: Rc@5."""\n'
        'A = ["Rc@50", "Rprec_c", "accuracy", "NDCG@5", "ToolGen NDCG@5", "recall@50"]\n'
        'def f(k, b, m):\n'
        '    """Rc@5"""\n'
        '    x = m[f"c_hit@{k}"], m["f_rprec"], f"{b} IS@{k}", "realistic COMPc@10", f"R{b}@{k}"\n'
        '    log(f"Rc@{k} fell by {x}", "dense G1 Rc@50", f"Rc@{k}, full catalog")\n'
        '    return f"ndcg_f@{k}"\n')
    assert metric_literals(tmp_path) == [
        "a.py:2: 'Rc@50'", "a.py:2: 'Rprec_c'", "a.py:5: 'c_hit@7'", "a.py:5: 'f_rprec'", "a.py:5: '7 IS@7'",
        "a.py:5: 'realistic COMPc@10'", "a.py:7: 'ndcg_f@7'"]
