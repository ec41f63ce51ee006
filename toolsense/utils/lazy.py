"""Names a package offers that load on first use (PEP 562's module ``__getattr__``).

A package whose ``__init__`` imported its modules eagerly loaded torch for whoever imported any
of them: ``toolsense.models.config`` ran ``toolsense/models/__init__.py``, which imported the
model loader. A package with heavy modules therefore lists what it offers with
:func:`lazy_exports` (and the same names under ``if TYPE_CHECKING:`` for type checkers and the
import-circle check); ``from toolsense.models import ModelConfig`` then imports
``toolsense.models.config`` only."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_exports(package: str, exports: dict[str, list[str]]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` of ``package`` offering ``exports`` (submodule -> names it
    defines): the first ``package.name`` imports that submodule and keeps the value on the package;
    any other name is an AttributeError (so ``from package import submodule`` still imports it)."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
