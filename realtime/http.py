"""Plain HTTP routes on the WebSocket port, and the handshake's gatekeeping.

websockets calls ``HttpRoutes.process_request`` for every incoming request
before any upgrade. It answers ``/healthz``, ``/readyz``, ``/metrics``,
``/v1/voices``, ``/load`` (saturation, ``realtime.overload``) and static
files of the web demo itself, and for
``/v1/stream`` decides whether the WebSocket may open: token (401), Origin
allow-list (403), readiness, draining and the connection limit (503).
Returning ``None`` lets the handshake proceed.

Thread: event loop.
"""

from __future__ import annotations

import hmac
import http
import logging
import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

import orjson
from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from realtime.overload import load_report

if TYPE_CHECKING:
    from realtime.server import Server

log = logging.getLogger(__name__)

STREAM_PATH = "/v1/stream"
DEFAULT_WEB_ROOT = Path(__file__).resolve().parent.parent / "clients" / "web"

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".wasm": "application/wasm",
    ".txt": "text/plain; charset=utf-8",
    ".map": "application/json",
}
_MAX_STATIC_BYTES = 8 * 1024 * 1024


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


def bearer_token(request: Request) -> str | None:
    """The token of ``Authorization: Bearer <token>``, else of ``?token=``."""
    header = request.headers.get("Authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    values = parse_qs(urlsplit(request.path).query).get("token")
    return values[0] if values else None


def token_allowed(token: str | None, tokens: tuple[str, ...]) -> bool:
    """Constant-time comparison against every configured token."""
    if token is None:
        return False
    given = token.encode()
    ok = False
    for expected in tokens:
        ok |= hmac.compare_digest(given, expected.encode())
    return ok


class HttpRoutes:
    def __init__(self, server: Server, web_root: Path | None = None) -> None:
        self.server = server
        self.web_root = (web_root or DEFAULT_WEB_ROOT).resolve()

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path == STREAM_PATH:
            return self._gate(connection, request)
        if path == "/healthz":
            return respond(connection, http.HTTPStatus.OK, b"ok\n", "text/plain; charset=utf-8")
        if path == "/readyz":
            return self._readyz(connection)
        if path == "/metrics":
            return respond(connection, http.HTTPStatus.OK, self.server.metrics.render(),
                           self.server.metrics.content_type)
        if path == "/v1/voices":
            return _json(connection, http.HTTPStatus.OK, {"voices": list(self.server.voices)})
        if path == "/load":
            return _json(connection, http.HTTPStatus.OK, load_report(self.server))
        return self._static(connection, path)

    def _readyz(self, connection: ServerConnection) -> Response:
        s = self.server
        body = {"ready": s.ready and not s.draining, "warm": s.ready, "draining": s.draining,
                "weights": s.weights_kind, "device": s.device}
        if s.startup_failure is not None:
            body["error"] = s.startup_failure
        status = http.HTTPStatus.OK if body["ready"] else http.HTTPStatus.SERVICE_UNAVAILABLE
        return _json(connection, status, body)

    def _gate(self, connection: ServerConnection, request: Request) -> Response | None:
        config = self.server.config
        if config.auth_tokens and not token_allowed(bearer_token(request), config.auth_tokens):
            log.info("refused a stream handshake: missing or wrong token")
            return respond(connection, http.HTTPStatus.UNAUTHORIZED, b"missing or invalid token\n",
                           "text/plain; charset=utf-8")
        origin = request.headers.get("Origin")
        if config.allowed_origins and origin is not None and origin not in config.allowed_origins:
            log.info("refused a stream handshake from origin %s", origin[:100])
            return respond(connection, http.HTTPStatus.FORBIDDEN, b"origin not allowed\n",
                           "text/plain; charset=utf-8")
        if self.server.draining:
            return respond(connection, http.HTTPStatus.SERVICE_UNAVAILABLE,
                           b"server is shutting down\n", "text/plain; charset=utf-8")
        if not self.server.ready:
            return respond(connection, http.HTTPStatus.SERVICE_UNAVAILABLE,
                           b"model is not ready yet\n", "text/plain; charset=utf-8")
        if self.server.connection_count >= config.max_connections:
            return respond(connection, http.HTTPStatus.SERVICE_UNAVAILABLE,
                           b"too many connections\n", "text/plain; charset=utf-8")
        return None

    def _static(self, connection: ServerConnection, path: str) -> Response:
        not_found = respond(connection, http.HTTPStatus.NOT_FOUND, b"not found\n",
                            "text/plain; charset=utf-8")
        target = self.resolve_static(path)
        if target is None:
            return not_found
        try:
            if target.stat().st_size > _MAX_STATIC_BYTES:
                return not_found
            body = target.read_bytes()
        except OSError:
            return not_found
        return respond(connection, http.HTTPStatus.OK, body, content_type(target))

    def resolve_static(self, path: str) -> Path | None:
        """The file under the web root that ``path`` names, or None.

        Refuses anything that would leave the root: ``..`` segments (also
        percent-encoded), absolute or backslash paths, NUL bytes, symlinks out.
        """
        rel = unquote(path).lstrip("/")
        if rel == "" or rel.endswith("/"):
            rel += "index.html"
        if "\x00" in rel or "\\" in rel or any(p in ("..", "") for p in rel.split("/")):
            return None
        target = (self.web_root / rel).resolve()
        if not target.is_relative_to(self.web_root) or not target.is_file():
            return None
        return target


def content_type(path: Path) -> str:
    known = _CONTENT_TYPES.get(path.suffix.lower())
    if known:
        return known
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"
