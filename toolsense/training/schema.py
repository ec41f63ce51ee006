"""Bridge between our typed dataclasses and OmegaConf structured configs.

OmegaConf has no ``Literal``; :func:`omegaconf_schema` makes a twin of a dataclass tree with
each ``Literal`` as ``str`` (Hydra then checks keys and types at compose time), and
:func:`from_dict` builds the real dataclasses back, checking each ``Literal`` choice and running
every ``__post_init__``, so a bad value fails with the dotted name of its field.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import lru_cache
from typing import Any, Literal, Optional, Union


def _schema_type(tp: Any) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return str
    if origin is Union:
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return Optional[_schema_type(inner[0])]
        return Any
    if origin in (list, typing.List):
        return typing.List[_schema_type(args[0])] if args else typing.List[Any]
    if origin in (dict, typing.Dict):
        return typing.Dict[str, _schema_type(args[1])] if args else typing.Dict[str, Any]
    if dataclasses.is_dataclass(tp):
        return omegaconf_schema(tp)
    return tp


def _default(f: dataclasses.Field) -> dict:
    if f.default is not dataclasses.MISSING:
        return {"default": f.default}
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        factory = f.default_factory  # type: ignore[misc]
        value = factory()
        if dataclasses.is_dataclass(value):
            twin = omegaconf_schema(type(value))
            return {"default_factory": lambda: twin(**_twin_kwargs(value))}
        return {"default_factory": factory}
    return {}


def _twin_kwargs(obj: Any) -> dict:
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v):
            v = omegaconf_schema(type(v))(**_twin_kwargs(v))
        elif isinstance(v, list) and v and dataclasses.is_dataclass(v[0]):
            v = [omegaconf_schema(type(x))(**_twin_kwargs(x)) for x in v]
        out[f.name] = v
    return out


@lru_cache(maxsize=None)
def omegaconf_schema(cls: type) -> type:
    """An OmegaConf-compatible twin of dataclass ``cls`` (no validation methods)."""
    hints = typing.get_type_hints(cls)
    fields = [(f.name, _schema_type(hints[f.name]), dataclasses.field(**_default(f))) for f in dataclasses.fields(cls) if f.init]
    return dataclasses.make_dataclass(cls.__name__ + "Schema", fields)


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        if value not in args:
            raise ValueError(f"{where}: {value!r} is not one of {list(args)}")
        return value
    if origin is Union:
        if value is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value, where) if len(inner) == 1 else value
    if origin in (list, typing.List) and args and isinstance(value, list):
        return [_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where)
    return value


def from_dict(cls: type, data: Any, where: str = "") -> Any:
    """Build dataclass ``cls`` from nested dicts; unknown keys and bad choices raise naming the field."""
    if dataclasses.is_dataclass(data):
        data = dataclasses.asdict(data)
    if not isinstance(data, dict):
        raise ValueError(f"{where or cls.__name__}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{where + '.' if where else ''}{unknown[0]}: unknown config key (known: {sorted(names)})")
    kwargs = {k: _convert(hints[k], v, f"{where + '.' if where else ''}{k}") for k, v in data.items()}
    return cls(**kwargs)
