"""Plain HTTP routes on the WebSocket port, and the handshake's gatekeeping.

websockets calls ``HttpRoutes.process_request`` for every incoming request
before any upgrade. It answers ``/healthz``, ``/readyz``, ``/metrics``,
``/v1/voices``, ``/v1/models`` (OpenAI's model list, for the tools that read
it before ``POST /v1/audio/speech``), ``/load`` (saturation,
``realtime.overload``) and static
files of the web demo itself, and for
``/v1/stream`` decides whether the WebSocket may open: token (401), Origin
allow-list (403), readiness, draining and the connection limit (503).
Returning ``None`` lets the handshake proceed.

Thread: event loop.
"""

from __future__ import annotations

import http
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import orjson
from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from realtime import cors
from realtime.accounting import Accounting
from realtime.auth import bearer_token, origin_allowed, token_allowed
from realtime.config import ServerConfig
from realtime.openai_speech.errors import ApiError
from realtime.state import ServiceState
from realtime.static import StaticFiles

log = logging.getLogger(__name__)

STREAM_PATH = "/v1/stream"
MODELS_PATH = "/v1/models"
VOICES_PATH = "/v1/voices"
# The speech endpoint takes any model name (one model serves them all); these
# are the names listed, ours first, then the ones OpenAI's clients default to.
MODEL_IDS = ("chattts", "tts-1", "tts-1-hd", "gpt-4o-mini-tts")
_TEXT = "text/plain; charset=utf-8"


def cors_readable(path: str) -> bool:
    """The GET routes a page on an allowed other origin may read (``cors``)."""
    return path in (VOICES_PATH, MODELS_PATH) or path.startswith(MODELS_PATH + "/")


def respond(connection: ServerConnection, status: http.HTTPStatus, body: bytes,
            content_type: str) -> Response:
    """An HTTP response with ``body`` and its content type (connection: close)."""
    response = connection.respond(status, "")
    response.body = body
    del response.headers["Content-Length"]
    del response.headers["Content-Type"]
    response.headers["Content-Length"] = str(len(body))
    response.headers["Content-Type"] = content_type
    response.headers["Cache-Control"] = "no-store"
    return response


def _json(connection: ServerConnection, status: http.HTTPStatus, value: object) -> Response:
    return respond(connection, status, orjson.dumps(value), "application/json")


class HttpRoutes:
    """``load_report`` makes the body of ``GET /load`` (``realtime.overload``)."""

    def __init__(self, config: ServerConfig, state: ServiceState, accounting: Accounting,
                 static: StaticFiles, load_report: Callable[[], dict[str, Any]]) -> None:
        self.config = config
        self.state = state
        self.accounting = accounting
        self.static = static
        self.load_report = load_report
        self._started = int(time.time())

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path == STREAM_PATH:
            return self._gate(connection, request)
        if path == "/healthz":
            return respond(connection, http.HTTPStatus.OK, b"ok\n", _TEXT)
        if path == "/readyz":
            return self._readyz(connection)
        if path == "/metrics":
            metrics = self.accounting.metrics
            return respond(connection, http.HTTPStatus.OK, metrics.render(), metrics.content_type)
        if path == VOICES_PATH:
            return self._readable(request, _json(connection, http.HTTPStatus.OK,
                                                 {"voices": list(self.state.voices)}))
        if path == MODELS_PATH or path.startswith(MODELS_PATH + "/"):
            return self._readable(request, self._models(connection, path))
        if path == "/load":
            return _json(connection, http.HTTPStatus.OK, self.load_report())
        found = self.static.read(path)
        if found is None:
            return respond(connection, http.HTTPStatus.NOT_FOUND, b"not found\n", _TEXT)
        return respond(connection, http.HTTPStatus.OK, *found)

    def _readable(self, request: Request, response: Response) -> Response:
        """``response`` readable by a page on an allowed other origin (``cors``)."""
        for name, value in cors.response_headers(request.headers.get("Origin"),
                                                 self.config.allowed_origins):
            response.headers[name] = value
        return response

    def _models(self, connection: ServerConnection, path: str) -> Response:
        """OpenAI's ``GET /v1/models`` (a list) and ``GET /v1/models/{id}``."""
        models = {m: {"id": m, "object": "model", "created": self._started,
                      "owned_by": "chattts-realtime"} for m in MODEL_IDS}
        if path == MODELS_PATH:
            return _json(connection, http.HTTPStatus.OK, {"object": "list", "data": list(models.values())})
        name = path[len(MODELS_PATH) + 1:]
        if name in models:
            return _json(connection, http.HTTPStatus.OK, models[name])
        error = ApiError(http.HTTPStatus.NOT_FOUND, "model_not_found",
                         f"no model {name[:100]!r} here; any of {', '.join(MODEL_IDS)} speaks with ChatTTS",
                         param="model")
        return _json(connection, http.HTTPStatus.NOT_FOUND, error.body())

    def _readyz(self, connection: ServerConnection) -> Response:
        s = self.state
        body = {"ready": s.accepting, "warm": s.ready, "draining": s.draining,
                "weights": s.weights, "device": s.device}
        if s.failure is not None:
            body["error"] = s.failure
        status = http.HTTPStatus.OK if s.accepting else http.HTTPStatus.SERVICE_UNAVAILABLE
        return _json(connection, status, body)

    def _gate(self, connection: ServerConnection, request: Request) -> Response | None:
        config = self.config
        if config.auth_tokens and not token_allowed(bearer_token(request), config.auth_tokens):
            log.info("refused a stream handshake: missing or wrong token")
            return respond(connection, http.HTTPStatus.UNAUTHORIZED, b"missing or invalid token\n",
                           _TEXT)
        origin = request.headers.get("Origin")
        if not origin_allowed(origin, config.allowed_origins):
            log.info("refused a stream handshake from origin %s", (origin or "")[:100])
            return respond(connection, http.HTTPStatus.FORBIDDEN, b"origin not allowed\n", _TEXT)
        if self.state.draining or self.state.failure is not None:
            return respond(connection, http.HTTPStatus.SERVICE_UNAVAILABLE,
                           b"server is shutting down\n", _TEXT)
        if not self.state.ready:
            return respond(connection, http.HTTPStatus.SERVICE_UNAVAILABLE,
                           b"model is not ready yet\n", _TEXT)
        if self.accounting.connections >= config.max_connections:
            return respond(connection, http.HTTPStatus.SERVICE_UNAVAILABLE,
                           b"too many connections\n", _TEXT)
        return None
