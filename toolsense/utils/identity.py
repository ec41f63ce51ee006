"""What a run was made under, compared so that the code may grow a field without stopping a study.

A finished run (``done.json``) and a run directory's ``config.yaml`` record resolved settings as
plain data. A later version of toolsense may add a field: the settings of a rerun then hold a key
the record lacks. A key that only the new settings hold is no difference when its value is the
field's default (the run was made as if it had been there), and a difference otherwise. Keys are
dotted paths into the plain data, list elements by position (``stage2.sources.0.kind``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterable, Mapping

from toolsense.utils.config import as_plain


def leaves(data: Any, prefix: str = "") -> dict[str, Any]:
    """Plain data as ``{dotted key: value}``, through dicts and lists (an empty one is a value)."""
    data = json.loads(json.dumps(data, default=str))  # tuples, enums and paths as JSON reads them back
    if isinstance(data, dict) and data:
        items: Iterable = data.items()
    elif isinstance(data, list) and data:
        items = enumerate(data)
    else:
        return {prefix: data}
    out: dict[str, Any] = {}
    for k, v in items:
        out.update(leaves(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def at_default(obj: Any, prefix: str = "") -> set[str]:
    """The dotted keys of a dataclass tree (``obj``) whose value is its field's declared default:
    the key itself and every leaf below it. Nested dataclasses, dicts and lists are walked, so a
    new field of a benchmark inside ``benchmarks`` is found too."""
    out: set[str] = set()
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            key, value = _join(prefix, f.name), getattr(obj, f.name)
            default = _default(f)
            if default is not dataclasses.MISSING and as_plain(value) == as_plain(default):
                out |= {key, *leaves(as_plain(value), key)}
            else:
                out |= at_default(value, key)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            out |= at_default(v, _join(prefix, str(k)))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out |= at_default(v, _join(prefix, str(i)))
    return out


def changes(recorded: Mapping[str, Any], now: Mapping[str, Any], defaults: Iterable[str] = ()) -> list[str]:
    """The dotted keys where ``now`` differs from ``recorded`` (sorted), leaving out a key only
    ``now`` holds whose value is its default (``defaults``: :func:`at_default` of the settings
    behind ``now``). A key only ``recorded`` holds (a field since removed) is a difference."""
    old, new, quiet = leaves(dict(recorded)), leaves(dict(now)), set(defaults)
    return sorted(k for k in set(old) | set(new)
                  if (k not in new or k in old or k not in quiet) and old.get(k, _ABSENT) != new.get(k, _ABSENT))


_ABSENT = object()


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


__all__ = ["at_default", "changes", "leaves"]
