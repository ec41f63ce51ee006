"""String enums for config choices: OmegaConf/Hydra validate them at compose time (it does not
support ``typing.Literal``), and members compare equal to their plain string values."""

from __future__ import annotations

from enum import Enum


class StrEnum(str, Enum):
    def __str__(self) -> str:
        return self.value

    @classmethod
    def refusal(cls, field: str, value: object) -> str:
        """The error for a value that is no member: the field and the choices (an enum may
        override it to say where a retired value went)."""
        return f"{field}={value!r}: choose from {[e.value for e in cls]}"


def choice(enum: type[StrEnum], value: str | StrEnum, field: str) -> StrEnum:
    """Coerce ``value`` to ``enum`` with an error naming the field and the choices."""
    try:
        return enum(value)
    except ValueError:
        raise ValueError(enum.refusal(field, value)) from None
