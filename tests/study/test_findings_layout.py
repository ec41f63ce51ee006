"""One finding, one file (toolsense/study/findings/): each finding module registers its own number, stays
readable in one file, and its functions live only there — no other module defines them again or imports
them (the report and the plan reading reach a finding through the registry alone) — and no other study
module picks a finding by its number. Checked on the source with ``ast``, and once through the registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "toolsense"
FINDINGS = PACKAGE / "study" / "findings"
MODULE = re.compile(r"f(\d+)_\w+\.py")
MAX_FINDING_LINES = 250
NUMBERED = re.compile(r"finding|rule|table|pilot", re.I)
"""Names whose subscript by an integer literal picks a finding by number (``rules[5]``, ``tables.get(1)``)."""


def finding_modules() -> dict[Path, int]:
    return {p: int(m.group(1)) for p in sorted(FINDINGS.glob("f*_*.py")) if (m := MODULE.fullmatch(p.name))}


def _defined(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _dotted(module: Path) -> str:
    return ".".join(module.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_every_finding_module_registers_its_own_number_once_and_fits_one_file():
    mods = finding_modules()
    assert sorted(mods.values()) == list(range(1, 8)), mods
    for path, n in mods.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        number = [x.value.value for x in tree.body if isinstance(x, ast.Assign) and isinstance(x.value, ast.Constant)
                  and any(getattr(t, "id", None) == "NUMBER" for t in x.targets)]
        assert number == [n], f"{path.name}: NUMBER = {number}, its name says {n}"
        calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "register"]
        assert len(calls) == 1, f"{path.name}: {len(calls)} register(...) calls"
        assert len(text.splitlines()) <= MAX_FINDING_LINES, f"{path.name}: {len(text.splitlines())} lines"


def test_a_findings_functions_live_only_in_its_file():
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py")}
    for path in finding_modules():
        own, dotted = _defined(trees[path]), _dotted(path)
        for other, tree in trees.items():
            if other == path:
                continue
            same_room = (PACKAGE / "study") in other.parents  # a private helper's name may recur in another room
            again = {n for n in own & _defined(tree) if same_room or not n.startswith("_")}
            assert not again, f"{other.relative_to(PACKAGE)} defines {sorted(again)} again (they live in {path.name})"
            for node in ast.walk(tree):
                names = ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                         [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                names += [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else []
                assert dotted not in names, (f"{other.relative_to(PACKAGE)}:{node.lineno} imports {dotted}: "
                                             "reach a finding through the registry (toolsense.study.findings)")


def _picks_by_number(node: ast.AST) -> bool:
    """``x.number == 6``, ``rules[5]`` / ``tables.get(1)`` / ``5 in plan.findings`` on a finding-ish name."""
    def numbered(expr: ast.AST) -> bool:
        return NUMBERED.search(ast.unparse(expr)) is not None

    def small_int(expr: ast.AST) -> bool:
        return isinstance(expr, ast.Constant) and type(expr.value) is int and 1 <= expr.value <= 99
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = node.left, node.comparators[0]
        if isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return small_int(left) and numbered(right)
        return any(small_int(a) and ast.unparse(b).endswith("number") for a, b in ((left, right), (right, left)))
    if isinstance(node, ast.Subscript):
        return small_int(node.slice) and numbered(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and small_int(node.args[0]) and numbered(node.func.value)
    return False


def test_no_other_study_module_picks_a_finding_by_number():
    for path in sorted((PACKAGE / "study").rglob("*.py")):
        if FINDINGS in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hits = [f"{path.relative_to(PACKAGE)}:{n.lineno} {ast.unparse(n)}" for n in ast.walk(tree) if _picks_by_number(n)]
        assert not hits, hits


def test_the_registry_holds_each_module_by_its_number():
    from toolsense.study.findings import registered

    specs = registered()
    assert [s.number for s in specs] == list(range(1, 8))
    for spec, (path, n) in zip(specs, finding_modules().items()):
        assert spec.number == n and spec.compute.__module__ == _dotted(path), (spec.number, spec.compute.__module__)
        assert spec.table is None or spec.table.__module__ == _dotted(path)
        assert spec.rule
