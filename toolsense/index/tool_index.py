"""A tool index: the mapping tool ↔ token sequence, serialised to one JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolsense.catalog import Catalog
from toolsense.utils.errors import UserError
from toolsense.utils.paths import atomic_write_text

Scheme = Literal["flat", "hierarchical"]
FORMAT_VERSION = 1


@dataclass
class ToolIndex:
    """``paths[tool_name]`` is the tool's id: a tuple of new-token strings (length 1 for flat).

    ``init_text[token]`` is the text whose sub-token embeddings initialise that token's row.
    The tool order follows the catalog; ``catalog_hash`` ties the index to its catalog.
    """

    scheme: Scheme
    builder: str
    params: dict[str, Any]
    catalog_hash: str
    paths: dict[str, tuple[str, ...]]
    init_text: dict[str, str]
    _by_path: dict[tuple[str, ...], str] = field(default=None, init=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.paths = {k: tuple(v) for k, v in self.paths.items()}
        self._by_path = {}
        for name, path in self.paths.items():
            if not path:
                raise ValueError(f"tool {name!r} has an empty token path")
            if path in self._by_path:
                raise ValueError(f"tools {self._by_path[path]!r} and {name!r} share the token path {path}")
            self._by_path[path] = name
        missing = {t for p in self.paths.values() for t in p} - set(self.init_text)
        if missing:
            raise ValueError(f"tokens without init text: {sorted(missing)[:5]}")
        # No tool's path may be a proper prefix of another's, else "id followed by EOS" is ambiguous
        # only in the trie sense; it is allowed, but then that inner node is also a leaf.

    @property
    def tools(self) -> list[str]:
        return list(self.paths)

    def tokens(self) -> list[str]:
        """The new tokens, unique, in order of first appearance."""
        return list(dict.fromkeys(t for p in self.paths.values() for t in p))

    def tool_of(self, path: tuple[str, ...]) -> str | None:
        return self._by_path.get(tuple(path))

    def depth(self) -> int:
        return max(len(p) for p in self.paths.values())

    def sharing(self) -> dict[str, Any]:
        """How the index's tokens are shared between tools, for the diagnostics that read them:
        ``per_tool`` when every token belongs to one tool (flat), else ``per_level`` — a token is
        shared by the tools below one node (structural, clustered) or by many (numeric digits,
        semantic name words), so a probe's token prompt spells the whole id and drift measures
        each distinct token once, not once per tool."""
        users: dict[str, int] = {}
        for p in self.paths.values():
            for t in set(p):
                users[t] = users.get(t, 0) + 1
        shared = sum(n > 1 for n in users.values())
        return {"unit": "per_level" if shared else "per_tool", "tokens": len(users), "shared_tokens": shared,
                "max_tools_per_token": max(users.values(), default=0), "depth": self.depth()}

    def internal_nodes(self) -> dict[tuple[str, ...], list[str]]:
        """Every proper path prefix (an internal node of the hierarchy) → the tools below it."""
        out: dict[tuple[str, ...], list[str]] = {}
        for name, path in self.paths.items():
            for d in range(1, len(path)):
                out.setdefault(path[:d], []).append(name)
        return out

    def check_catalog(self, catalog: Catalog, where: str = "index") -> None:
        if catalog.content_hash() != self.catalog_hash or list(self.paths) != catalog.names:
            raise UserError(
                f"{where} was built for a different catalog (index catalog_hash={self.catalog_hash}, "
                f"catalog content_hash={catalog.content_hash()}, {len(self.paths)} vs {len(catalog)} tools)"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "scheme": self.scheme,
            "builder": self.builder,
            "params": self.params,
            "catalog_hash": self.catalog_hash,
            "tools": [{"name": n, "tokens": list(p)} for n, p in self.paths.items()],
            "init_text": self.init_text,
        }

    def save(self, path: str | Path) -> Path:
        return atomic_write_text(path, json.dumps(self.to_dict(), ensure_ascii=False))

    @classmethod
    def load(cls, path: str | Path, catalog: Catalog | None = None) -> "ToolIndex":
        """Read an index file; with ``catalog``, refuse one built for different tools."""
        d = json.loads(Path(path).read_text())
        if d.get("format_version") != FORMAT_VERSION:
            raise UserError(f"{path}: unsupported index format_version {d.get('format_version')!r}")
        idx = cls(
            scheme=d["scheme"],
            builder=d["builder"],
            params=d["params"],
            catalog_hash=d["catalog_hash"],
            paths={t["name"]: tuple(t["tokens"]) for t in d["tools"]},
            init_text=d["init_text"],
        )
        if catalog is not None:
            idx.check_catalog(catalog, where=str(path))
        return idx
