"""A tiny named registry for plug-in points (index builders, formats, benchmarks, metrics)."""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects; registering a taken name is an error, looking up a missing one
    names the known choices."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; choose from {sorted(self._items)}") from None

    def check(self, value: object, field: str, extra: tuple[str, ...] = ()) -> str:
        """``value`` as a registered name (or one of ``extra``, e.g. ``auto``), else a ValueError
        naming the config field and the known names: configs call this in ``__post_init__`` so
        the registry is the one list of valid values."""
        name = getattr(value, "value", value)
        if not isinstance(name, str) or (name not in self._items and name not in extra):
            raise ValueError(f"{field}={name!r}: choose from {self.names() + list(extra)}")
        return name

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items
