"""The server's one HTTP front: one port, one gate, one set of routes, two parsers.

websockets parses only GETs (the upgrade and the plain routes); everything
else (``POST /v1/audio/speech``, a browser's preflight, a GET kept alive
after a POST) is read by ``realtime.http1`` (h11). Each accepted
connection starts with a ``FirstRequestLine`` protocol that waits for the
first bytes of the request line: ``GET `` hands the transport to the
``ServerConnection`` websockets would have used, any other method to an
``Http1Connection``. The choice is made once per connection, before any
parsing, by swapping the transport's protocol: after it, bytes flow
straight to the chosen protocol, so the WebSocket path pays nothing per
frame (one extra object per connection).

Whichever parser read it, a request meets the same ``HttpRoutes`` and the
same ``Gate``, and one bound (``--handshake-timeout``): a connection that
says nothing, a WebSocket handshake, and an HTTP request's head and body
must each be in within it from the connection's start.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import http
import logging
from collections.abc import Callable
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from protocol import ErrorCode
from realtime import exchange
from realtime.api_error import ApiError
from realtime.exchange import HttpRequest, HttpResponse
from realtime.gate import Gate
from realtime.http import SPEECH_PATH, VOICES_PATH, HttpRoutes, cors_readable
from realtime.http1 import Exchange, Handler, Http1Connection, HttpLimits
from realtime.send_batch import StreamConnection

log = logging.getLogger(__name__)

_GET = b"GET "


class FirstRequestLine(asyncio.Protocol):
    """Holds a new connection until its first bytes say which protocol gets it."""

    def __init__(self, websocket: Callable[[], asyncio.Protocol],
                 http: Callable[[float], asyncio.Protocol], timeout: float,
                 undecided: set[FirstRequestLine]) -> None:
        self._websocket = websocket
        self._http = http  # called with the connection's deadline (loop time)
        self._timeout = timeout
        self._undecided = undecided  # the owner's set, for closing at shutdown
        self._buffer = b""
        self._transport: Any = None  # uvloop's transports are no asyncio.Transport subclass
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._undecided.add(self)
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + self._timeout
        self._timer = loop.call_at(self._deadline, transport.close)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) < len(_GET) and _GET.startswith(self._buffer):
            return  # "GE" could still become "GET "
        get = self._buffer.startswith(_GET)
        chosen = self._websocket() if get else self._http(self._deadline)
        transport = self._transport
        self._stop_timer()
        transport.set_protocol(chosen)
        chosen.connection_made(transport)
        chosen.data_received(self._buffer)
        self._buffer = b""

    def eof_received(self) -> bool:
        return False  # nothing was asked: close

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def _stop_timer(self) -> None:
        self._undecided.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class HttpFront:
    """The routes for both parsers; ``speech`` serves ``POST /v1/audio/speech``
    (None: the endpoint is off, and websockets alone serves the port)."""

    def __init__(self, gate: Gate, routes: HttpRoutes, speech: Handler | None,
                 limits: HttpLimits, uploads: Handler | None = None) -> None:
        self.gate = gate
        self.routes = routes
        self.speech = speech
        self.uploads = uploads  # POST /v1/voices (realtime.voice_upload)
        self.limits = limits
        self._http: set[Http1Connection] = set()
        self._undecided: set[FirstRequestLine] = set()

    # -- websockets' side -------------------------------------------------------------------

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """websockets' hook, before any upgrade: a route's answer, a refusal
        by the gate, or None to let the handshake proceed."""
        answer = self.routes.answer(HttpRequest("GET", request.path, request.headers))
        if answer is None:
            return None
        response = connection.respond(http.HTTPStatus(answer.status), "")
        del response.headers["Content-Length"]
        del response.headers["Content-Type"]
        for name, value in answer.headers:
            response.headers[name] = value
        response.headers["Content-Length"] = str(len(answer.body))
        response.body = answer.body
        return response

    def connection_factory(self) -> Callable[..., asyncio.Protocol]:
        """For ``serve(create_connection=...)``: called with websockets'
        arguments for a ``ServerConnection`` (a ``StreamConnection``, which
        sends an outbox's messages together), built only for a GET; while
        the speech endpoint is off, every connection is one."""
        if self.speech is None:
            return StreamConnection

        def create(*args: Any, **kwargs: Any) -> asyncio.Protocol:
            return FirstRequestLine(lambda: StreamConnection(*args, **kwargs), self._http_protocol,
                                    self.limits.request_timeout, self._undecided)
        return create

    # -- the HTTP/1.1 side ------------------------------------------------------------------

    def _http_protocol(self, deadline: float) -> asyncio.Protocol:
        return Http1Connection(self._handle, self.limits, self._http, deadline)

    async def _handle(self, ex: Exchange) -> None:
        request = ex.request
        path = request.route
        if request.method == "OPTIONS" and (path == SPEECH_PATH or cors_readable(path)):
            await ex.respond(self.gate.preflight(request))
        elif path == SPEECH_PATH and request.method == "POST" and self.speech is not None:
            await self.speech(ex)
        elif path == VOICES_PATH and request.method == "POST" and self.uploads is not None:
            await self.uploads(ex)
        elif request.method in ("GET", "HEAD"):
            await ex.respond(self._get(request))
        else:
            answer = exchange.method_not_allowed(SPEECH_PATH, "POST") if path == SPEECH_PATH \
                else exchange.refusal(ApiError(http.HTTPStatus.NOT_FOUND, ErrorCode.BAD_MESSAGE.value,
                                               f"no route for {request.method} {path[:100]}"))
            answer.headers += self.gate.access(request)
            await ex.respond(answer)

    def _get(self, request: HttpRequest) -> HttpResponse:
        answer = self.routes.answer(request)
        if answer is None:  # /v1/stream: a WebSocket needs a connection of its own
            return exchange.text(http.HTTPStatus.BAD_REQUEST, "open WebSockets on a new connection\n")
        return answer

    @property
    def connections(self) -> int:
        return len(self._http)

    async def close(self, timeout: float = 2.0) -> None:
        """Close connections that never said anything and idle HTTP ones; give
        running requests ``timeout``, then cancel them."""
        for undecided in list(self._undecided):
            undecided.close()
        tasks = []
        for connection in list(self._http):
            if connection.task is None:
                connection.close()
            else:
                tasks.append(connection.task)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for task in pending:
                task.cancel()
        for connection in list(self._http):
            connection.close()
