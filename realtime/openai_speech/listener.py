"""One port for both: websockets for GETs, uvicorn's HTTP/1.1 for everything else.

websockets serves only GET requests (the upgrade and the plain routes), and
the speech endpoint is a POST. Rather than a second port, each accepted
connection starts with a ``FirstRequestLine`` protocol that waits for the
first bytes of the request line: ``GET `` hands the transport to the
``ServerConnection`` websockets would have used, any other method to
uvicorn's h11 protocol running ``SpeechApp``. The choice is made once per
connection, before any parsing, by swapping the transport's protocol: after
it, bytes flow straight to the chosen protocol, so the WebSocket path pays
nothing per frame (one extra object per connection).

Everything runs in the server's one event loop (uvloop); uvicorn's own
``Server`` (signals, listening sockets, lifespan) is not used, only its
HTTP/1.1 connection protocol with a loaded ``uvicorn.Config``.

A connection that sends nothing for ``first_bytes_timeout`` seconds is
closed, as websockets would close a handshake that never comes.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.server import ServerState
from websockets.asyncio.server import ServerConnection

log = logging.getLogger(__name__)

_GET = b"GET "


class FirstRequestLine(asyncio.Protocol):
    """Holds a new connection until its first bytes say which protocol gets it."""

    def __init__(self, websocket: Callable[[], asyncio.Protocol],
                 http: Callable[[], asyncio.Protocol], timeout: float,
                 undecided: set[FirstRequestLine]) -> None:
        self._websocket = websocket
        self._http = http
        self._timeout = timeout
        self._undecided = undecided  # the owner's set, for closing at shutdown
        self._buffer = b""
        self._transport: Any = None  # uvloop's transports are no asyncio.Transport subclass
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._undecided.add(self)
        self._timer = asyncio.get_running_loop().call_later(self._timeout, transport.close)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) < len(_GET) and _GET.startswith(self._buffer):
            return  # "GE" could still become "GET "
        chosen = self._websocket() if self._buffer.startswith(_GET) else self._http()
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


class SharedPort:
    """Builds ``FirstRequestLine`` protocols for websockets' ``serve`` and owns
    the HTTP side's connections (for shutdown)."""

    def __init__(self, app: Any, first_bytes_timeout: float = 10.0,
                 keep_alive_s: int = 5) -> None:
        self.config = uvicorn.Config(
            app, http="h11", ws="none", lifespan="off", log_config=None, access_log=False,
            proxy_headers=False, server_header=False, timeout_keep_alive=keep_alive_s)
        self.config.load()
        self.state = ServerState()
        self._timeout = first_bytes_timeout
        self._undecided: set[FirstRequestLine] = set()

    def connection_factory(self) -> Callable[..., asyncio.Protocol]:
        """For ``serve(create_connection=...)``: called with websockets'
        arguments for a ``ServerConnection``, which it builds only for a GET."""

        def create(*args: Any, **kwargs: Any) -> asyncio.Protocol:
            return FirstRequestLine(lambda: ServerConnection(*args, **kwargs), self._http_protocol,
                                    self._timeout, self._undecided)
        return create

    def _http_protocol(self) -> asyncio.Protocol:
        return self.config.http_protocol_class(  # type: ignore[call-arg]
            config=self.config, server_state=self.state, app_state={})

    @property
    def connections(self) -> int:
        return len(self.state.connections)

    async def close(self, timeout: float = 2.0) -> None:
        """Close connections that never said anything and idle HTTP ones; give
        running requests ``timeout``, then cancel them."""
        for undecided in list(self._undecided):
            undecided.close()
        for connection in list(self.state.connections):
            connection.shutdown()
        tasks = list(self.state.tasks)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for task in pending:
                task.cancel()
        for connection in list(self.state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()
