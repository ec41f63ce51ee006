"""What a comparison cell rests on: the items a result was scored on (cells side by side in one column
must rest on the same ones, or be marked), and whether two copies of a baseline's result are one
evaluation (equal numbers on two catalogs are not)."""

from __future__ import annotations

from typing import Any

from toolsense.utils.config import differences


def item_set(res: dict[str, Any]) -> tuple:
    """What items a result rests on: its benchmark file(s), the selection that shapes the items (split,
    style, missing gold: the fingerprint's ``benchmark``) and their number (a ``limit`` or a drop shows there)."""
    bench = (res.get("fingerprint") or {}).get("benchmark") or {}
    files = (res.get("hashes") or {}).get("benchmark_sha256") or res.get("benchmark_path")
    return files, bench.get("split"), bench.get("style"), bench.get("missing"), res.get("n")


def items_text(s: tuple) -> str:
    return f"n={s[-1]}, benchmark {str(s[0])[:12]}" + "".join(f", {v}" for v in s[1:-1] if v)


def _ranked(res: dict[str, Any]) -> dict[str, Any] | None:
    """What a baseline's numbers depend on, from its fingerprint: the ranker with the catalog it ranks
    (``system``) and the benchmark; None for a result written without a fingerprint."""
    fp = res.get("fingerprint")
    return {"system": fp.get("system"), "benchmark": fp.get("benchmark"), "n": res.get("n")} if fp else None


def same_evaluation(first: dict[str, Any], again: dict[str, Any], same_numbers: bool) -> bool:
    """Whether two copies of a baseline's result are one evaluation: equal numbers and, where both
    have a fingerprint, the same ranker, catalog and items (equal numbers do not make two catalogs one)."""
    a, b = _ranked(first), _ranked(again)
    return same_numbers and (a == b if a and b else True)


def why_different(first: dict[str, Any], again: dict[str, Any]) -> str:
    a, b = _ranked(first), _ranked(again)
    return f"; {'; '.join(differences(a, b)[:4])}" if a and b and a != b else ""


def mixed_items(items: dict[str, dict[str, set]], cells: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """column -> row -> its item sets, for the columns whose cells *with a value* rest on other items."""
    valued = {col: {lb: s for lb, s in by.items() if (cells.get(lb, {}).get(col) or {}).get("value") is not None}
              for col, by in items.items()}
    return {col: {lb: " + ".join(sorted(map(items_text, s))) for lb, s in by.items()}
            for col, by in valued.items() if by and len(set().union(*by.values())) > 1}

