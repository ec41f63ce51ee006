"""A finding's sensitivity table: its contrast at every (k, scale) cell, pooled and per configuration,
whether the verdict depends on k or on the scale (its Markdown: reporting/sensitivity_table.py). Each
finding builds its own table (its ``table`` in the registry); this module only gives them one shape."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def depends_on(cells: Mapping[tuple[Any, str], Mapping[str, Any]], ks: Sequence[Any],
               scales: Sequence[str]) -> list[str]:
    """"k" and / or "the scale" where a cell's verdict differs along that axis of the table."""
    present = [(k, s) for k in ks for s in scales if (k, s) in cells]
    ks = list(dict.fromkeys(k for k, _ in present))
    scales = list(dict.fromkeys(s for _, s in present))
    along_k = any(flips([cells[(k, s)]["verdict"] for k in ks if (k, s) in cells]) for s in scales)
    along_s = any(flips([cells[(k, s)]["verdict"] for s in scales if (k, s) in cells]) for k in ks)
    return [w for w, flips in (("k", along_k), ("the scale", along_s)) if flips]


def flips(verdicts: Sequence[str]) -> bool:
    return len({v.split(" ")[0] for v in verdicts if v != "n/a"}) > 1


def table_of(finding: int, cells: dict, ks: Sequence[Any], scales: Sequence[str], rows: list[str], below: list[str],
           floor: float, k_table: int, not_evaluated: list, label: str) -> dict[str, Any]:
    return {"finding": finding, "cells": cells, "rows": rows, "below_floor": below, "floor": floor, "k_table": k_table,
            "depends_on": depends_on(cells, [k for k in ks if k not in not_evaluated], scales),
            "not_evaluated": not_evaluated, "pooled_label": label}


