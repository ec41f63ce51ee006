"""Append-only JSONL stores: results are written as they are computed and reused on rerun,
so an interrupted audit resumes where it stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Hashable


class JsonlStore:
    """Rows keyed by ``key(row)``; ``get`` finds a finished row, ``add`` appends and flushes."""

    def __init__(self, path: str | Path, key: Callable[[dict], Hashable]):
        self.path = Path(path)
        self.key = key
        self.rows: dict[Hashable, dict] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short by an interruption is recomputed
                    self.rows[key(row)] = row
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def get(self, k: Hashable) -> dict | None:
        return self.rows.get(k)

    def add(self, row: dict) -> dict:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.rows[self.key(row)] = row
        return row
