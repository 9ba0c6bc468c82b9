"""The server's one HTTP front: one port, one parser, one route table, one gate.

Every connection starts as an ``Http1Connection`` (``realtime.server.http.http1``: h11
parses every request) whose requests go to ``HttpRoutes.handle``
(``realtime.server.http.routes``), GET and POST alike. A connection's first request may
be a WebSocket upgrade of ``/v1/stream``: the gate answers it
(``HttpRoutes.stream_refusal``: refused, it gets that answer over HTTP);
accepted, the connection is handed to websockets as ``serve`` would have
made it (``StreamConnection``, through ``serve``'s documented
``create_connection`` hook), which receives every byte the client sent and
performs the opening handshake itself. An upgrade asked later on a
kept-alive connection gets a 400: WebSockets open on a connection of their
own.

One bound (``--handshake-timeout``) holds from the connection's start: a
connection that says nothing, a WebSocket upgrade's head, and an HTTP
request's head and body must each be in within it (websockets' own
``open_timeout`` then bounds its handshake).

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from realtime.server.http.exchange import REQUEST_ID, HttpRequest, HttpResponse, request_id
from realtime.server.http.http1 import Http1Connection, HttpLimits
from realtime.server.http.routes import HttpRoutes
from realtime.server.stream.send_batch import StreamConnection

log = logging.getLogger(__name__)


class HttpFront:
    """The port's connections (``connection_factory``) and their shutdown."""

    def __init__(self, routes: HttpRoutes, limits: HttpLimits) -> None:
        self.routes = routes
        self.limits = limits
        self._http: set[Http1Connection] = set()

    def connection_factory(self) -> Callable[..., asyncio.Protocol]:
        """For ``serve(create_connection=...)``: called with websockets'
        arguments for a ``ServerConnection``, it returns an HTTP connection
        that builds that ``StreamConnection`` only for an accepted upgrade."""
        def create(*args: Any, **kwargs: Any) -> asyncio.Protocol:
            return Http1Connection(self.routes.handle, self.limits, self._http,
                                   upgrade=lambda request: self._upgrade(request, args, kwargs))
        return create

    def _upgrade(self, request: HttpRequest, args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> HttpResponse | Callable[[], asyncio.Protocol]:
        """A refusal to answer, or the WebSocket connection to hand over to."""
        if request.route != "/v1/stream":
            return self.routes.answer(request)  # a WebSocket only opens on /v1/stream
        refused = self.routes.stream_refusal(request)
        if refused is not None:
            return refused
        return lambda: StreamConnection(*args, **kwargs)

    def process_response(self, connection: ServerConnection, request: Request,
                         response: Response) -> Response:
        """websockets' hook on the answers it sends itself (the 101 of an
        upgrade, its own refusals): each carries an ``X-Request-Id``, as
        every answer h11 sends does (``realtime.server.http.http1``)."""
        if REQUEST_ID not in response.headers:
            response.headers[REQUEST_ID] = request_id()
        return response

    @property
    def connections(self) -> int:
        return len(self._http)

    async def close(self, timeout: float = 2.0) -> None:
        """Close idle HTTP connections; give running requests ``timeout``,
        then cancel them."""
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
