"""The one converter from a composed Hydra config (or a plain mapping) to a typed dataclass tree.

Every entry script does ``cfg = to_config(Schema, dict_cfg)`` and hands the result to its
``run``; run directories read their saved ``config.yaml`` sections with it too. Contract:

* nested dataclasses, ``list[Dataclass]``, ``dict[str, Dataclass]`` and ``Optional[...]`` are
  built recursively; a missing key takes the dataclass default;
* ``StrEnum``/``Enum`` fields are coerced from their value, ``Literal[...]`` values are checked,
  ``Union[...]`` values must match one member;
* every number is checked against its field's type and range before the dataclass is built:
  an ``int`` field takes whole numbers only (``2.0`` becomes ``2``; ``2.5``, ``nan``, ``true`` are
  refused), every number must be finite and, unless its field declares otherwise with
  ``Annotated[int, Range(...)]`` (:class:`Range`, :data:`Seed`, :data:`Share`, ...), ``>= 0``;
  ``Annotated[list[...], NON_EMPTY]`` refuses an empty list;
* an unknown key, a bad choice, a number out of range or a ``__post_init__`` error is raised as
  :class:`~toolsense.utils.errors.ConfigError` (a ``ValueError``) naming the dotted field
  (``metrics.ks``, ``benchmarks.mcq.limit``); ``ignore_unknown`` drops unknown keys instead (a
  saved run config may carry sections of another entry point).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
import typing
from typing import Annotated, Any, Mapping, Optional, Sequence, TypeVar

from toolsense.utils.errors import ConfigError

T = TypeVar("T")
_NONE = type(None)


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a numeric field takes, declared beside its type: ``Annotated[int, Range(1)]``.
    A number without one must be finite and ``>= 0``. ``low_open``/``high_open`` exclude that end;
    ``inf`` lets ``inf`` through (where it means "no limit"); ``why`` says what the number is in
    the refusal."""

    low: Optional[float] = 0
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False
    inf: bool = False
    why: str = ""

    def refusal(self, val: float) -> Optional[str]:
        """Why ``val`` is outside this range (None when inside)."""
        if math.isnan(val) or (math.isinf(val) and not (self.inf and val > 0)):
            return "must be a finite number"
        if self.low is not None and (val < self.low or (self.low_open and val == self.low)):
            return f"must be {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None and (val > self.high or (self.high_open and val == self.high)):
            return f"must be {'<' if self.high_open else '<='} {self.high:g}"
        return None


NON_NEGATIVE = Range()
NON_EMPTY = "non-empty"
"""``Annotated[list[...], NON_EMPTY]``: an empty list is refused."""
Seed = Annotated[int, Range(0, 2**32 - 1, why="a random seed: numpy takes 0 to 2**32 - 1")]
Positive = Annotated[int, Range(1)]
"""A count that must be at least 1 (a batch size, a beam width, a number of resamples)."""
Share = Annotated[float, Range(0, 1)]
"""A fraction, a probability or a score on the 0-1 scale."""
Signed = Annotated[float, Range(None)]
"""A float where a negative value means something (a length penalty)."""


def to_plain(cfg: Any) -> Any:
    """A DictConfig/ListConfig as resolved plain containers without Hydra's own node; anything
    else unchanged."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(cfg, (DictConfig, ListConfig)):
        cfg = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    if isinstance(cfg, dict):
        cfg = {k: v for k, v in cfg.items() if k != "hydra"}
    return cfg


def to_config(cls: type[T], data: Any, where: str = "", ignore_unknown: bool = False) -> T:
    """``cls`` built from ``data`` (a DictConfig, a mapping, or already a ``cls``); see the
    module docstring for the contract."""
    if isinstance(data, cls):
        return data
    ranges: list[tuple[str, float, Range]] = []
    obj = _dataclass(cls, to_plain(data) if data is not None else {}, where, ignore_unknown, ranges)
    for at, val, rng in ranges:  # after every __post_init__: a field's own check, where it has one, says more
        bad = rng.refusal(val)
        if bad:
            raise ConfigError(f"{at}={val!r}: {bad}" + (f" ({rng.why})" if rng.why else ""))
    return obj


def _dataclass(cls: type, data: Any, where: str, ignore_unknown: bool, ranges: list) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where or 'config'}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls, include_extras=True)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown and not ignore_unknown:
        raise ConfigError(f"{where or 'config'}: unknown field(s) {unknown}; known: {sorted(names)}")
    kwargs = {k: _value(hints[k], v, _join(where, k), ignore_unknown, ranges) for k, v in data.items() if k in names}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError, KeyError) as e:
        msg = str(e.args[0] if e.args else e)
        head = re.match(r"(\w+)[=:.\[]", msg)
        if where and where not in msg:  # "field=value: ..." of one of cls's fields gets its dotted path
            msg = f"{where}.{msg}" if head and head.group(1) in names else f"{where}: {msg}"
        raise ConfigError(msg) from None


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def _matches(hint: Any, val: Any) -> bool:
    """Whether ``val`` has the shape of a Union member (containers and scalars are not coerced
    across members: ``Union[Literal["auto"], list[int]]`` rejects ``"sideways"``; a number is
    an ``int`` member's to refuse when it is not whole)."""
    origin = typing.get_origin(hint) or hint
    if origin is Annotated:
        return _matches(typing.get_args(hint)[0], val)
    if origin in (list, tuple):
        return isinstance(val, (list, tuple))
    if origin is dict or dataclasses.is_dataclass(hint):
        return isinstance(val, Mapping)
    if hint in (int, float):
        return isinstance(val, (int, float))  # a bool too: the number's check refuses it by name
    if isinstance(hint, type) and not issubclass(hint, enum.Enum) and hint is not Any:
        return isinstance(val, hint)
    return True


def _number(hint: type, val: Any, where: str, rng: Range, ranges: list) -> Any:
    """``val`` as the int or float its field holds, or a ConfigError naming ``where``, the value
    and the rule: whole numbers for ``int``, finite (or ``inf`` where ``rng`` allows it). Whether it
    lies inside ``rng`` is appended to ``ranges``, checked once the whole tree is built."""
    why = f" ({rng.why})" if rng.why else ""
    if isinstance(val, str) and hint is float:
        try:
            val = float(val)
        except ValueError:
            raise ConfigError(f"{where}={val!r}: must be a number{why}") from None
    if isinstance(val, bool) or not isinstance(val, (int, float)):
        raise ConfigError(f"{where}={val!r}: must be a {'whole number' if hint is int else 'number'}{why}")
    if hint is int and isinstance(val, float):
        if not val.is_integer():
            raise ConfigError(f"{where}={val!r}: must be a whole number{why}")
        val = int(val)
    if math.isnan(val) or (math.isinf(val) and not (rng.inf and val > 0)):
        raise ConfigError(f"{where}={val!r}: must be a finite number{why}")
    ranges.append((where, val, rng))
    return val


def _value(hint: Any, val: Any, where: str, ignore_unknown: bool, ranges: list, rng: Optional[Range] = None) -> Any:
    """``val`` converted to ``hint`` (recursing), or a ConfigError naming ``where``. ``rng``: the
    range an enclosing ``Annotated`` declared for the number inside an ``Optional``/``Union``;
    ``ranges``: every number met with its range, checked once the whole tree is built."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or isinstance(hint, TypeVar):
        return val
    if origin is Annotated:
        inner, *meta = args
        out = _value(inner, val, where, ignore_unknown, ranges, next((m for m in meta if isinstance(m, Range)), rng))
        if NON_EMPTY in meta and isinstance(out, (list, tuple, dict)) and not out:
            raise ConfigError(f"{where}={val!r}: must not be empty")
        return out
    if origin is typing.Union:
        if val is None:
            if _NONE in args:
                return None
            raise ConfigError(f"{where}: may not be null")
        members = [a for a in args if a is not _NONE]
        if len(members) == 1:
            return _value(members[0], val, where, ignore_unknown, ranges, rng)
        refusal = None
        for m in members:
            if not _matches(m, val):
                continue
            try:
                return _value(m, val, where, ignore_unknown, ranges, rng)
            except ValueError as e:
                refusal = refusal or e
        if refusal is not None and isinstance(val, (int, float)):
            raise refusal  # a number an int member refused says why (not whole, out of range)
        raise ConfigError(f"{where}={val!r}: expected one of {[getattr(m, '__name__', str(m)) for m in members]}")
    if origin is typing.Literal:
        if val not in args:
            raise ConfigError(f"{where}={val!r}: choose from {list(args)}")
        return val
    if val is None:
        return None  # a non-Optional field set to null: the dataclass's own check decides
    if hint in (int, float):
        return _number(hint, val, where, rng or NON_NEGATIVE, ranges)
    if dataclasses.is_dataclass(hint):
        return _dataclass(hint, val, where, ignore_unknown, ranges)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(val.value if isinstance(val, enum.Enum) else val)
        except ValueError:
            refusal = getattr(hint, "refusal", None)
            raise ConfigError(refusal(where, val) if refusal else f"{where}={val!r}: choose from {[e.value for e in hint]}") from None
    if origin in (list, tuple) and args and isinstance(val, (list, tuple)):
        items = [_value(args[0], v, f"{where}[{i}]", ignore_unknown, ranges) for i, v in enumerate(val)]
        return items if origin is list else tuple(items)
    if origin is dict and len(args) == 2 and isinstance(val, Mapping):
        return {k: _value(args[1], v, _join(where, k), ignore_unknown, ranges) for k, v in val.items()}
    return val


def defaults_of(cls: type) -> dict[str, Any]:
    """The dataclass's defaults as plain data (enums as their values), without running the
    top-level ``__post_init__`` (a schema may require fields the defaults leave unset).
    Fields without a default are left out."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            val = f.default
        elif f.default_factory is not dataclasses.MISSING:
            val = f.default_factory()
        else:
            continue
        out[f.name] = _plain_value(dataclasses.asdict(val) if dataclasses.is_dataclass(val) else val)
    return out


def omegaconf_can_type(hint: Any, _seen: frozenset = frozenset()) -> bool:
    """Whether OmegaConf 2.3 can type ``hint`` as a structured config: no ``Literal`` and no
    ``Union`` other than ``Optional`` anywhere in the dataclass tree."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return False
    if origin is typing.Union:
        members = [a for a in args if a is not _NONE]
        return len(members) == 1 and omegaconf_can_type(members[0], _seen)
    if origin in (list, tuple, dict):
        return all(omegaconf_can_type(a, _seen) for a in args if a is not Ellipsis)
    if dataclasses.is_dataclass(hint) and hint not in _seen:
        return all(omegaconf_can_type(h, _seen | {hint}) for h in typing.get_type_hints(hint).values())
    return True


def as_plain(obj: Any) -> Any:
    """A dataclass tree as plain data (enums as their values): what results.json records."""
    return _plain_value(dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj)


def _plain_value(val: Any) -> Any:
    if isinstance(val, enum.Enum):
        return val.value
    if isinstance(val, dict):
        return {k: _plain_value(v) for k, v in val.items()}
    if isinstance(val, (list, tuple)):
        return [_plain_value(v) for v in val]
    return val


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists stay values), after a JSON round trip so
    tuples and lists compare equal."""
    obj = json.loads(json.dumps(obj, default=str))
    if not isinstance(obj, dict):
        return {prefix: obj}
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(flatten(v, key) if isinstance(v, dict) and v else {key: v})
    return out


def differences(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """``field: <on disk> (on disk) vs <now> (now)`` for each field whose values differ."""
    a, b = flatten(dict(stored)), flatten(dict(wanted))
    return [f"{k}: {a.get(k, '<absent>')!r} (on disk) vs {b.get(k, '<absent>')!r} (now)"
            for k in sorted(set(a) | set(b)) if a.get(k, "<absent>") != b.get(k, "<absent>")]


Layer = tuple[str, Mapping[str, Any], Sequence[str]]
"""One typed hand-off laid over a composed config: (where it comes from, values as they nest, labels left out)."""


def lay_over(data: dict[str, Any], layers: Sequence[Layer], cls: type, labelled: Sequence[str]) -> dict[str, Any]:
    """``data`` (plain) with each layer (``where``, values, skip) laid over it in order: its values merged
    key by key (a list or a value replaces), checked by building ``cls``, then its labels left out of
    the ``labelled`` sections (a label in none of them is refused). Errors name ``<where>.settings`` /
    ``<where>.skip``."""
    for where, values, skip in layers:
        data = _merged(data, to_plain(values))
        try:
            to_config(cls, data)
        except ValueError as e:
            raise ConfigError(f"{where}.settings: {e}") from None
        for label in skip:
            held = [sec for sec in labelled if label in (data.get(sec) or {})]
            if not held:
                have = sorted({k for sec in labelled for k in data.get(sec) or {}})
                raise ConfigError(f"{where}.skip: {label!r} is not among the {' / '.join(labelled)} of this config ({have})")
            for sec in held:
                del data[sec][label]
    return data


def _merged(base: Any, over: Any) -> Any:
    if not (isinstance(base, Mapping) and isinstance(over, Mapping)):
        return over
    return {**base, **{k: _merged(base.get(k), v) if k in base else v for k, v in over.items()}}


__all__ = ["NON_EMPTY", "NON_NEGATIVE", "Positive", "Range", "Seed", "Share", "Signed", "as_plain",
           "defaults_of", "differences", "flatten", "lay_over", "omegaconf_can_type", "to_config", "to_plain"]
