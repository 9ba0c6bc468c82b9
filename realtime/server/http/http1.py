"""HTTP/1.1 on the server's port: a thin adapter over h11, the one HTTP parser.

h11 (a pure-Python HTTP/1.1 state machine, the one uvicorn uses) parses
every request; this module owns the socket: one ``Exchange`` at a time per
connection (keep-alive, pipelined requests wait their turn), flow control
both ways, and the bounds that keep a slow client from holding a connection
for good:

- a request's head and body must be in within ``request_timeout`` seconds
  (the first request's bound runs from the connection's start); a stalled
  client is closed, others are served meanwhile (one event loop, nothing
  blocks);
- a kept-alive connection that starts no new request within
  ``keep_alive_s`` is closed;
- a head over ``max_head_bytes`` is a 431-less close (h11 refuses it); a
  body over ``max_body`` is a 413 and the connection closes after it.

A connection's first request may ask for a WebSocket (``Upgrade:
websocket``): ``upgrade`` (``realtime.server.http.front``) answers it with a refusal,
or with the protocol to hand the connection to, which then receives every
byte the client has sent so far (the request's head included) and does the
handshake itself. Bytes are kept for that only until the first request's
head is complete.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import http
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import h11
from websockets.datastructures import Headers

from protocol import ErrorCode
from realtime.server.http.api_error import ApiError
from realtime.server.http.exchange import HttpRequest, HttpResponse, refusal, with_request_id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HttpLimits:
    request_timeout: float = 10.0
    keep_alive_s: float = 5.0
    max_head_bytes: int = 16 * 1024
    max_body: int = 1 << 20
    # Routes whose bodies may be larger (uploads): (path, limit) pairs.
    large_bodies: tuple[tuple[str, int], ...] = ()


class Exchange:
    """One request and its answer: ``body()`` once, then ``respond`` a whole
    answer, or ``start``, ``send`` chunks (chunked encoding) and ``end``.
    ``disconnected`` is set when the client goes away."""

    def __init__(self, connection: Http1Connection, request: HttpRequest) -> None:
        self.request = request
        self.disconnected = asyncio.Event()
        self.started = False
        self.ended = False
        self._connection = connection
        self._body = bytearray()
        self._complete = asyncio.Event()
        self._too_large = False
        limits = connection.limits
        self.max_body = dict(limits.large_bodies).get(request.route, limits.max_body)

    async def body(self) -> bytes:
        """The whole body; ``ApiError`` 413 past the limit, 400 if cut short."""
        limit = self.max_body
        declared = self.request.headers.get("Content-Length", "0")
        if self._too_large or (declared.isdigit() and int(declared) > limit):
            raise ApiError(http.HTTPStatus.REQUEST_ENTITY_TOO_LARGE, ErrorCode.BAD_MESSAGE.value,
                           f"the request body exceeds {limit} bytes")
        self._connection.continue_if_asked()
        waiters = [asyncio.ensure_future(e.wait()) for e in (self._complete, self.disconnected)]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()
        if self._too_large:
            return await self.body()
        if not self._complete.is_set():
            raise ApiError(http.HTTPStatus.BAD_REQUEST, ErrorCode.BAD_MESSAGE.value,
                           "the request body was cut short")
        return bytes(self._body)

    async def respond(self, response: HttpResponse) -> None:
        await self.start(response.status,
                         [*response.headers, ("Content-Length", str(len(response.body)))])
        await self.end(response.body)

    async def start(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.started = True
        self._connection.send(h11.Response(status_code=status, headers=with_request_id(headers)))

    async def send(self, chunk: bytes) -> None:
        if chunk and self.request.method != "HEAD":
            self._connection.send(h11.Data(data=chunk))
        await self._connection.writable()

    async def end(self, chunk: bytes = b"") -> None:
        await self.send(chunk)
        self.ended = True
        self._connection.send(h11.EndOfMessage())

    def feed(self, data: bytes) -> None:
        if len(self._body) + len(data) > self.max_body:
            self._too_large = True
            self._complete.set()
        elif not self._too_large:
            self._body += data

    def completed(self) -> None:
        self._complete.set()


Handler = Callable[[Exchange], Awaitable[None]]
# A WebSocket upgrade's answer (a refusal) or the protocol taking the connection over.
Upgrade = Callable[[HttpRequest], "HttpResponse | Callable[[], asyncio.Protocol]"]
_KEPT_MAX = 64 * 1024  # more than any head h11 accepts: past it, no upgrade is coming


class Http1Connection(asyncio.Protocol):
    """One connection; ``deadline`` (loop time) bounds its first request."""

    def __init__(self, handler: Handler, limits: HttpLimits, connections: set[Http1Connection],
                 deadline: float | None = None, upgrade: Upgrade | None = None) -> None:
        self.limits = limits
        self._handler = handler
        self._connections = connections
        self._deadline = deadline
        self._upgrade = upgrade
        # Every byte of the first request, for a hand-over (None: none can come).
        self._received: bytearray | None = bytearray() if upgrade is not None else None
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_head_bytes)
        self._transport: Any = None  # uvloop's transports are no asyncio.Transport subclass
        self._timer: asyncio.TimerHandle | None = None
        self._idle = True  # between requests: the keep-alive bound applies
        self._writable = asyncio.Event()
        self._writable.set()
        self.exchange: Exchange | None = None
        self.task: asyncio.Task[None] | None = None

    # -- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._connections.add(self)
        loop = asyncio.get_running_loop()
        self._arm(self._deadline or loop.time() + self.limits.request_timeout)
        self._idle = False

    def data_received(self, data: bytes) -> None:
        if self._idle:  # a new request begins: it gets the whole bound
            self._idle = False
            self._arm(asyncio.get_running_loop().time() + self.limits.request_timeout)
        if self._received is not None:
            self._received += data
            if len(self._received) > _KEPT_MAX:
                self._received = None
        self._h11.receive_data(data)
        self._process()

    def eof_received(self) -> bool:
        return False  # a client that stops sending is gone: close

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self._disarm()
        self._writable.set()
        if self.exchange is not None:
            self.exchange.disconnected.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # -- what an Exchange uses ------------------------------------------------------------

    def send(self, event: h11.Event) -> None:
        if self._transport.is_closing():
            return
        data = self._h11.send(event)
        if data:
            self._transport.write(data)

    async def writable(self) -> None:
        await self._writable.wait()

    def continue_if_asked(self) -> None:
        if self._h11.they_are_waiting_for_100_continue:
            self.send(h11.InformationalResponse(status_code=100, headers=[]))

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    # -- the request cycle ----------------------------------------------------------------

    def _process(self) -> None:
        while self._h11.their_state is not h11.ERROR:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                log.info("closing an HTTP connection: %s", exc)
                self._refuse_malformed()
                return
            if event is h11.NEED_DATA:
                return
            if event is h11.PAUSED:  # the next request waits for this answer
                self._transport.pause_reading()
                return
            if isinstance(event, h11.Request):
                if self._begin(event):
                    return  # handed over: the WebSocket owns the connection now
            elif isinstance(event, h11.Data) and self.exchange is not None:
                self.exchange.feed(event.data)
            elif isinstance(event, h11.EndOfMessage) and self.exchange is not None:
                self._disarm()  # the whole request is in: no bound on the answer
                self.exchange.completed()
            elif isinstance(event, h11.ConnectionClosed):
                return

    def _begin(self, event: h11.Request) -> bool:
        """Start answering ``event``; True when the connection was handed over."""
        headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers])
        request = HttpRequest(event.method.decode("ascii"), event.target.decode("latin-1"), headers)
        answer: HttpResponse | None = None
        if self._upgrade is not None and _asks_websocket(request):
            if self._received is None:
                answer = HttpResponse(http.HTTPStatus.BAD_REQUEST,
                                      [("Content-Type", "text/plain; charset=utf-8")],
                                      b"a WebSocket opens on a connection of its own\n")
            else:
                decided = self._upgrade(request)
                if not isinstance(decided, HttpResponse):
                    self._hand_over(decided)
                    return True
                answer = decided
        self._received = None  # only a connection's first request may be handed over
        self.exchange = exchange = Exchange(self, request)
        work = self._handler(exchange) if answer is None else exchange.respond(answer)
        self.task = asyncio.get_running_loop().create_task(self._run(exchange, work), name="http-request")
        return False

    def _hand_over(self, protocol_factory: Callable[[], asyncio.Protocol]) -> None:
        transport, data = self._transport, bytes(self._received or b"")
        self._disarm()
        self._connections.discard(self)
        self._received = None
        protocol = protocol_factory()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        protocol.data_received(data)

    async def _run(self, exchange: Exchange, work: Awaitable[None]) -> None:
        try:
            await work
        except asyncio.CancelledError:  # shutdown ran out of time
            self.close()
            raise
        except Exception:
            log.exception("HTTP handler failed")
        if not exchange.started and not self._transport.is_closing():
            await exchange.respond(refusal(ApiError(500, ErrorCode.INTERNAL.value, "internal error")))
        self._finish(exchange)

    def _finish(self, exchange: Exchange) -> None:
        self.exchange = self.task = None
        both_done = self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE
        if not exchange.ended or not both_done:  # cut short, or a body left unread
            self.close()
            return
        self._h11.start_next_cycle()
        self._idle = True
        self._arm(asyncio.get_running_loop().time() + self.limits.keep_alive_s)
        self._transport.resume_reading()
        self._process()  # a pipelined request may be waiting in h11's buffer

    def _refuse_malformed(self) -> None:
        if self.exchange is None or not self.exchange.started:
            body = b"malformed request\n"
            try:
                self.send(h11.Response(status_code=400, headers=with_request_id([
                    ("Content-Type", "text/plain; charset=utf-8"),
                    ("Content-Length", str(len(body))), ("Connection", "close")])))
                self.send(h11.Data(data=body))
                self.send(h11.EndOfMessage())
            except h11.LocalProtocolError:
                pass  # h11 cannot answer in this state: closing says enough
        self.close()

    def _arm(self, at: float) -> None:
        self._disarm()
        self._timer = asyncio.get_running_loop().call_at(at, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if not self._idle:
            log.info("closing an HTTP connection: its request was not in within %.1f s",
                     self.limits.request_timeout)
        self.close()


def _asks_websocket(request: HttpRequest) -> bool:
    """A GET asking to upgrade to WebSocket (RFC 6455, 4.1; tokens case-insensitive)."""
    upgrade = request.headers.get("Upgrade", "")
    return request.method == "GET" and "websocket" in {t.strip().lower() for t in upgrade.split(",")}
