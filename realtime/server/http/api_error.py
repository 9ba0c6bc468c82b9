"""HTTP refusals, in OpenAI's shape, with the protocol's codes.

The one error type of the HTTP front, below both of its users: the gate
(``realtime.server.http.gate``: token, origin, readiness) and the routes refuse with it,
the WebSocket handshake as plain text, the speech endpoint as JSON.
Every refusal is an ``ApiError``: an HTTP status, a human-readable message,
the offending body field (``param``) and a code. The code is the wire
protocol's (docs/protocol.md: ``bad_message``, ``unsupported``,
``overloaded``, ...), so a client learns the same reason on either path; the
only exception is a missing or wrong token, which has no wire code (the
WebSocket refuses it at the handshake) and takes OpenAI's ``invalid_api_key``.
The body is OpenAI's: ``{"error": {"message", "type", "param", "code"}}``.

Thread: pure values.
"""

from __future__ import annotations

import http
import math

import orjson

from protocol import ErrorCode

# How a wire code reads over HTTP when it refuses a request before any audio.
STATUS_OF: dict[str, int] = {
    ErrorCode.BAD_JSON.value: 400,
    ErrorCode.BAD_MESSAGE.value: 400,
    ErrorCode.UNSUPPORTED.value: 400,
    ErrorCode.TEXT_TOO_LONG.value: 400,
    ErrorCode.OVERLOADED.value: 429,
    ErrorCode.TOO_MANY_ACTIVE.value: 429,
    ErrorCode.DEADLINE_UNMEETABLE.value: 503,
    ErrorCode.SHUTTING_DOWN.value: 503,
    ErrorCode.INTERNAL.value: 500,
}
# Refusals caused by load carry Retry-After; this is the hint when the
# refusal itself names none.
LOAD_CODES = frozenset({ErrorCode.OVERLOADED.value, ErrorCode.TOO_MANY_ACTIVE.value,
                        ErrorCode.DEADLINE_UNMEETABLE.value})
DEFAULT_RETRY_AFTER_MS = 1000
INVALID_API_KEY = "invalid_api_key"


def _openai_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


class ApiError(Exception):
    """A refused request. ``retry_after_ms`` is set for refusals caused by load."""

    def __init__(self, status: int, code: str, message: str, param: str | None = None,
                 retry_after_ms: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        if retry_after_ms is None and code in LOAD_CODES:
            retry_after_ms = DEFAULT_RETRY_AFTER_MS
        self.retry_after_ms = retry_after_ms

    @classmethod
    def from_wire(cls, code: str, message: str, field: str | None = None,
                  retry_after_ms: int | None = None) -> ApiError:
        """The HTTP refusal for a wire error code (an unknown code is a 500)."""
        return cls(STATUS_OF.get(code, 500), code, message, field, retry_after_ms)

    def body(self) -> dict[str, object]:
        return {"error": {"message": self.message, "type": _openai_type(self.status),
                          "param": self.param, "code": self.code}}

    def headers(self) -> list[tuple[str, str]]:
        out = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]
        if self.retry_after_ms is not None:
            seconds = max(1, math.ceil(self.retry_after_ms / 1000))
            out.append(("Retry-After", str(seconds)))
        if self.status == http.HTTPStatus.UNAUTHORIZED:
            out.append(("WWW-Authenticate", "Bearer"))
        return out

    def encoded(self) -> bytes:
        return orjson.dumps(self.body())
