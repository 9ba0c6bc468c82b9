"""Typed reads of one decoded JSON object, with the protocol's error rules.

A ``FieldReader`` wraps one JSON object (a message, or a nested object such as
``params``) and reads each field with its type and range. A failure raises
``ProtocolError``: ``bad_message`` for a missing field, a wrong JSON type or a
number out of range, ``unsupported`` for a well-formed value that names
something not offered. The error names the field (dotted under a prefix, e.g.
``params.top_k``) and carries the message's id when that id was valid.

JSON rules, the same everywhere: ``null`` is the same as an absent field; an
integer is a JSON number written without fraction or exponent (``5.0`` and
``true`` are not integers); a number is an integer or a finite float, never a
boolean.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection
from typing import Any, TypeVar, overload

from protocol.errors import ErrorCode, ProtocolError


class _Missing(enum.Enum):
    MISSING = enum.auto()


_MISSING = _Missing.MISSING
T = TypeVar("T")


def is_integer(value: object) -> bool:
    return type(value) is int


def is_number(value: object) -> bool:
    return type(value) is int or (type(value) is float and math.isfinite(value))


class FieldReader:
    """Reads fields of ``obj``. ``msg_id`` is echoed in errors; ``prefix``
    (e.g. ``"params."``) is put before field names in errors."""

    def __init__(self, obj: dict[str, Any], msg_id: str | None = None, prefix: str = "") -> None:
        self.obj = obj
        self.msg_id = msg_id
        self.prefix = prefix

    def fail(
        self, name: str, message: str, code: ErrorCode = ErrorCode.BAD_MESSAGE
    ) -> ProtocolError:
        """The error for field ``name`` (to raise)."""
        return ProtocolError(code, message, field=self.prefix + name, id=self.msg_id)

    def _get(self, name: str, required: bool) -> Any:
        value = self.obj.get(name)
        if value is None:
            if required:
                raise self.fail(name, f"missing field {self.prefix + name!r}")
            return _MISSING
        return value

    def nested(self, name: str) -> FieldReader | None:
        """A reader over the object in field ``name``; None when absent."""
        value = self._get(name, required=False)
        if value is _MISSING:
            return None
        if not isinstance(value, dict):
            raise self.fail(name, f"{self.prefix + name} must be an object")
        return FieldReader(value, self.msg_id, f"{self.prefix}{name}.")

    @overload
    def string(self, name: str) -> str: ...
    @overload
    def string(self, name: str, default: T) -> str | T: ...

    def string(self, name: str, default: object = _MISSING) -> object:
        """A string; required when no default is given."""
        value = self._get(name, required=default is _MISSING)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise self.fail(name, f"{self.prefix + name} must be a string")
        return value

    @overload
    def boolean(self, name: str) -> bool: ...
    @overload
    def boolean(self, name: str, default: T) -> bool | T: ...

    def boolean(self, name: str, default: object = _MISSING) -> object:
        value = self._get(name, required=default is _MISSING)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise self.fail(name, f"{self.prefix + name} must be true or false")
        return value

    @overload
    def integer(self, name: str, low: int, high: int) -> int: ...
    @overload
    def integer(self, name: str, low: int, high: int, default: T) -> int | T: ...

    def integer(self, name: str, low: int, high: int, default: object = _MISSING) -> object:
        """An integer in ``low..high`` (both included)."""
        value = self._get(name, required=default is _MISSING)
        if value is _MISSING:
            return default
        if not is_integer(value) or not low <= value <= high:
            raise self.fail(name, f"{self.prefix + name} must be an integer from {low} to {high}")
        return value

    @overload
    def number(self, name: str, low: float, high: float, *, low_open: bool = False) -> float: ...
    @overload
    def number(self, name: str, low: float, high: float, *, low_open: bool = False,
               default: T) -> float | T: ...

    def number(
        self,
        name: str,
        low: float,
        high: float,
        *,
        low_open: bool = False,
        default: object = _MISSING,
    ) -> object:
        """A number in ``low..high``; ``low_open`` excludes ``low`` itself.
        Returned as a float."""
        value = self._get(name, required=default is _MISSING)
        if value is _MISSING:
            return default
        if not is_number(value) or not (
            (value > low if low_open else value >= low) and value <= high
        ):
            bracket = "(" if low_open else "["
            where = f"{bracket}{low}, {high}]"
            raise self.fail(name, f"{self.prefix + name} must be a number in {where}")
        return float(value)

    def choice(self, name: str, offered: Collection[str] | None, default: str) -> str:
        """A string naming one of ``offered`` (any string when None).
        A string not offered is ``unsupported``."""
        value: str = self.string(name, default)
        if offered is not None and value not in offered:
            raise self.fail(
                name,
                f"{self.prefix + name} {value!r} is not offered (one of: {', '.join(offered)})",
                ErrorCode.UNSUPPORTED,
            )
        return value

    def string_list(self, name: str, default: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """A list of strings; ``default`` when absent (required without one)."""
        value = self._get(name, required=default is None)
        if value is _MISSING:
            assert default is not None
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(name, f"{self.prefix + name} must be a list of strings")
        return tuple(value)

    def integer_list(self, name: str) -> tuple[int, ...]:
        value = self._get(name, required=True)
        if not isinstance(value, list) or not all(is_integer(v) for v in value):
            raise self.fail(name, f"{self.prefix + name} must be a list of integers")
        return tuple(value)

    def optional_number(self, name: str) -> float | None:
        """A finite number or null (server timing fields)."""
        value = self._get(name, required=False)
        if value is _MISSING:
            return None
        if not is_number(value):
            raise self.fail(name, f"{self.prefix + name} must be a number or null")
        return float(value)
