"""The protocol's error codes and the exception that carries a refusal.

``ErrorCode`` lists every ``code`` an ``error`` message can carry, and
``NON_TERMINAL_CODES`` the ones that refuse a single message without ending
any utterance. ``ProtocolError`` is raised by the decoders (``protocol.codec``)
for a frame that breaks the protocol; ``to_message()`` turns it into the wire
``Error``.
"""

from __future__ import annotations

from enum import StrEnum

from protocol.messages import Error


class ErrorCode(StrEnum):
    """Every ``code`` an ``error`` message can carry (protocol v1)."""

    BAD_JSON = "bad_json"
    BAD_MESSAGE = "bad_message"
    UNKNOWN_TYPE = "unknown_type"
    BINARY_NOT_ALLOWED = "binary_not_allowed"
    DUPLICATE_ID = "duplicate_id"
    UNKNOWN_ID = "unknown_id"
    INPUT_CLOSED = "input_closed"
    TEXT_TOO_LONG = "text_too_long"
    TOO_MANY_ACTIVE = "too_many_active"
    UNSUPPORTED = "unsupported"
    OVERLOADED = "overloaded"
    DEADLINE_UNMEETABLE = "deadline_unmeetable"
    SLOW_CONSUMER = "slow_consumer"
    SHUTTING_DOWN = "shutting_down"
    INTERNAL = "internal"


# Refuse one message, end nothing: a repeated id (the running utterance goes
# on), input after the utterance's input ended, an id that names no running
# utterance (for instance a cancel that raced the end).
NON_TERMINAL_CODES: frozenset[str] = frozenset(
    {ErrorCode.DUPLICATE_ID, ErrorCode.INPUT_CLOSED, ErrorCode.UNKNOWN_ID})


class ProtocolError(Exception):
    """A refusal to send to the client as one ``error`` message.

    ``code`` is the wire code, ``message`` a human-readable sentence, ``field``
    the offending field (dotted for nested ones, e.g. ``params.top_k``) or
    None, and ``id`` the offending message's id when it was a valid id, else
    None (then the error is reported at connection level).
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        field: str | None = None,
        id: str | None = None,  # noqa: A002 - the wire name
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.field = field
        self.id = id

    def to_message(self) -> Error:
        """The wire ``error`` message for this refusal."""
        return Error(id=self.id, code=self.code.value, message=self.message, field=self.field)

    def __repr__(self) -> str:
        return (
            f"ProtocolError({self.code.value!r}, {self.message!r}, "
            f"field={self.field!r}, id={self.id!r})"
        )
