"""Typed exceptions for the errors a server can report, one class per error code.

`TTSError` is the base of everything the client raises on purpose. Each error code of
the wire protocol has its own subclass, so callers can write
``except Overloaded:`` and retry later, or ``except DeadlineUnmeetable:`` and move the
job elsewhere. `error_for(code)` maps a code string to its class; an unknown code
(a newer server) maps to `TTSError` itself.
"""

from __future__ import annotations

from protocol import ErrorCode


class TTSError(Exception):
    """Base class: a request or connection failed.

    Attributes: `code` (the wire error code, or None for client-side failures),
    `message` (human readable), `field` (the offending field, if the server named one),
    `id` (the utterance id, or None for connection-level errors), `retry_after_ms`
    (refusals caused by load: when the same request is next worth trying here; see
    `clients.backoff`).
    """

    code: str | None = None

    def __init__(self, message: str = "", *, code: str | None = None,
                 field: str | None = None, id: str | None = None,
                 retry_after_ms: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.field = field
        self.id = id
        self.retry_after_ms = retry_after_ms

    def __str__(self) -> str:
        parts = [self.message or self.__class__.__name__]
        if self.code:
            parts.append(f"code={self.code}")
        if self.field:
            parts.append(f"field={self.field}")
        if self.id:
            parts.append(f"id={self.id}")
        if self.retry_after_ms is not None:
            parts.append(f"retry_after_ms={self.retry_after_ms}")
        return " ".join(parts)


class BadJson(TTSError):
    code = ErrorCode.BAD_JSON.value


class BadMessage(TTSError):
    code = ErrorCode.BAD_MESSAGE.value


class UnknownType(TTSError):
    code = ErrorCode.UNKNOWN_TYPE.value


class BinaryNotAllowed(TTSError):
    code = ErrorCode.BINARY_NOT_ALLOWED.value


class DuplicateId(TTSError):
    code = ErrorCode.DUPLICATE_ID.value


class UnknownId(TTSError):
    code = ErrorCode.UNKNOWN_ID.value


class InputClosed(TTSError):
    code = ErrorCode.INPUT_CLOSED.value


class TextTooLong(TTSError):
    code = ErrorCode.TEXT_TOO_LONG.value


class TooManyActive(TTSError):
    code = ErrorCode.TOO_MANY_ACTIVE.value


class Unsupported(TTSError):
    code = ErrorCode.UNSUPPORTED.value


class Overloaded(TTSError):
    code = ErrorCode.OVERLOADED.value


class DeadlineUnmeetable(TTSError):
    code = ErrorCode.DEADLINE_UNMEETABLE.value


class SlowConsumer(TTSError):
    code = ErrorCode.SLOW_CONSUMER.value


class ShuttingDown(TTSError):
    code = ErrorCode.SHUTTING_DOWN.value


class InternalError(TTSError):
    code = ErrorCode.INTERNAL.value


class UtteranceCancelled(TTSError):
    """The utterance ended with `cancelled` (by our cancel, or stopped by the server)."""


class ConnectionLost(TTSError):
    """The WebSocket closed while the utterance was still running."""


class HandshakeRefused(TTSError):
    """The server refused the WebSocket handshake (`status`: 401 bad token, 403 origin)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class ProtocolViolation(TTSError):
    """The server sent something the protocol does not allow (a client-side check)."""


_BY_CODE: dict[str, type[TTSError]] = {
    cls.code: cls
    for cls in (BadJson, BadMessage, UnknownType, BinaryNotAllowed, DuplicateId, UnknownId,
                InputClosed, TextTooLong, TooManyActive, Unsupported, Overloaded,
                DeadlineUnmeetable, SlowConsumer, ShuttingDown, InternalError)
}


def error_for(code: str) -> type[TTSError]:
    """The exception class for a wire error code; `TTSError` for codes this client lacks."""
    return _BY_CODE.get(str(code), TTSError)


def from_message(msg) -> TTSError:
    """Build the exception for a decoded `protocol.Error` message."""
    cls = error_for(msg.code)
    exc = cls(msg.message, field=msg.field, id=msg.id,
              retry_after_ms=msg.retry_after_ms)
    if cls is TTSError:
        exc.code = msg.code
    return exc
