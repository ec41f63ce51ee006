"""String enums for config choices: OmegaConf/Hydra validate them at compose time (it does not
support ``typing.Literal``), and members compare equal to their plain string values."""

from __future__ import annotations

from enum import Enum


class StrEnum(str, Enum):
    def __str__(self) -> str:
        return self.value


def choice(enum: type[StrEnum], value: str | StrEnum, field: str) -> StrEnum:
    """Coerce ``value`` to ``enum`` with an error naming the field and the choices."""
    try:
        return enum(value)
    except ValueError:
        raise ValueError(f"{field}={value!r}: choose from {[e.value for e in enum]}") from None
