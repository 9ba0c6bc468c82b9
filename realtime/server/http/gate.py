"""The one gate of the HTTP front: who may open a stream or ask for speech.

Both fronts ask it before any work: the WebSocket handshake on
``/v1/stream`` and ``POST /v1/audio/speech``. In order: the token (401), the
Origin allow-list (403), draining or a failed device (503 ``shutting_down``),
readiness (503 ``overloaded``, retry in a second) and, for a stream, the
connection limit (503). Each front renders the refusal its way (plain text
at the handshake, OpenAI's JSON on the speech endpoint). The same gate
gives the CORS headers of an answer to a page on an allowed other origin,
answers the browser's preflight, and opens the quota a connection or a
request spends (``quota_for``).

Thread: event loop.
"""

from __future__ import annotations

import http
import logging

from protocol import ErrorCode
from realtime.server.accounting import Accounting
from realtime.server.config import ServerConfig
from realtime.server.http import cors
from realtime.server.http.api_error import INVALID_API_KEY, ApiError
from realtime.server.http.auth import bearer_token, origin_allowed, principal_of, token_allowed
from realtime.server.http.exchange import HttpResponse, RequestHead, refusal
from realtime.server.ratelimit import ConnectionQuota, QuotaBook
from realtime.server.state import ServiceState

log = logging.getLogger(__name__)

NOT_READY_RETRY_MS = 1000
_UNAVAILABLE = http.HTTPStatus.SERVICE_UNAVAILABLE


class Gate:
    def __init__(self, config: ServerConfig, state: ServiceState, accounting: Accounting) -> None:
        self.config = config
        self.state = state
        self.accounting = accounting

    def refusal(self, request: RequestHead, stream: bool) -> ApiError | None:
        """Why ``request`` may not go on (None: it may). ``stream``: a
        WebSocket, which also counts against ``max_connections``."""
        config = self.config
        if config.auth_tokens and not token_allowed(bearer_token(request), config.auth_tokens):
            log.info("refused a %s: missing or wrong token", "stream" if stream else "request")
            return ApiError(http.HTTPStatus.UNAUTHORIZED, INVALID_API_KEY, "missing or invalid token")
        origin = request.headers.get("Origin")
        if not origin_allowed(origin, config.allowed_origins):
            log.info("refused a request from origin %s", (origin or "")[:100])
            return ApiError(http.HTTPStatus.FORBIDDEN, ErrorCode.BAD_MESSAGE.value,
                            "origin not allowed")
        if self.state.draining or self.state.failure is not None:
            return ApiError(_UNAVAILABLE, ErrorCode.SHUTTING_DOWN.value, "the server is shutting down")
        if not self.state.ready:
            return ApiError(_UNAVAILABLE, ErrorCode.OVERLOADED.value, "the model is not ready yet",
                            retry_after_ms=NOT_READY_RETRY_MS)
        if stream and self.accounting.connections >= config.max_connections:
            return ApiError(_UNAVAILABLE, ErrorCode.OVERLOADED.value, "too many connections")
        return None

    def access(self, request: RequestHead) -> list[tuple[str, str]]:
        """The CORS headers of an answer ``request``'s page may read."""
        return cors.response_headers(request.headers.get("Origin"), self.config.allowed_origins)

    def preflight(self, request: RequestHead) -> HttpResponse:
        """A browser's ``OPTIONS``: 204 with what it may send, or 403."""
        headers = cors.preflight_headers(request.headers.get("Origin"), self.config.allowed_origins)
        if headers is None:
            return refusal(ApiError(http.HTTPStatus.FORBIDDEN, ErrorCode.BAD_MESSAGE.value,
                                    "origin not allowed"))
        return HttpResponse(http.HTTPStatus.NO_CONTENT, headers)


def quota_for(quotas: QuotaBook, config: ServerConfig, request: RequestHead | None) -> ConnectionQuota:
    """The quota a connection (or one speech request) spends: its token's
    when the server checks tokens, the connection's own limits otherwise."""
    token = bearer_token(request) if config.auth_tokens and request is not None else None
    return quotas.open(principal_of(token))
