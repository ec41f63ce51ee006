"""The paper's findings, one module each (``f<n>_<name>.py``, behind ``base.FindingSpec``), registered
by number: importing this package imports every finding module beside it, so adding a finding is adding
one file; the report and the plan reading iterate over :func:`registered`."""

from __future__ import annotations

import importlib
import pkgutil
import re

from toolsense.study.findings.base import FLOOR_RULE, REGISTRY, FindingSpec, TableInput, configured, judged

MODULE = re.compile(r"f(\d+)_\w+")
"""A finding module's name: ``f<number>_<name>``."""

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if MODULE.fullmatch(_info.name):
        importlib.import_module(f"{__name__}.{_info.name}")


def registered() -> list[FindingSpec]:
    """Every finding, in the paper's order (by number)."""
    return [REGISTRY[n] for n in sorted(REGISTRY)]


def finding(number: int) -> FindingSpec:
    """The finding registered under ``number``."""
    return REGISTRY[number]


__all__ = ["FLOOR_RULE", "FindingSpec", "TableInput", "configured", "finding", "judged", "registered"]
