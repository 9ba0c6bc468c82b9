"""Keeping one connection open between utterances: `ping` before the server's idle timeout.

A server that closes idle connections (no active utterance and no client message for its
timeout) states the timeout in `hello.limits.idle_timeout_s`. `Keepalive` sends `ping`
once `KEEPALIVE_SHARE` of it has passed without a message while nothing is active (an
active utterance keeps the connection open by itself), and matches the `pong`s to the
pings that wait for them. Runs on the connection's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from clients.errors import ConnectionLost
from protocol import ClientMessage, Hello
from protocol.words import Ping

log = logging.getLogger(__name__)

# Pings go out after this share of the server's idle timeout without a message: two
# chances before the timeout, even with a ping delayed by a busy loop.
KEEPALIVE_SHARE = 0.4


class Keepalive:
    """Pings for one client. `send` sends a message; `idle()` says whether the
    connection is open with no active utterance. Call `sent()` after every message."""

    def __init__(self, send: Callable[[ClientMessage], Awaitable[None]],
                 idle: Callable[[], bool]) -> None:
        self._send = send
        self._idle = idle
        self.last_sent = time.monotonic()
        self.pings = 0  # keepalive pings sent
        self._pongs: list[asyncio.Future[None]] = []
        self._task: asyncio.Task | None = None
        self._interval_s: float | None = None

    def sent(self) -> None:
        self.last_sent = time.monotonic()

    def start(self, idle_timeout_s: float | None) -> None:
        """Keep alive against this timeout (None: the server closes nothing; no pings)."""
        self.sent()
        self._interval_s = max(0.05, KEEPALIVE_SHARE * idle_timeout_s) if idle_timeout_s else None
        if self._interval_s is not None and self._task is None:
            self._task = asyncio.create_task(self._run(), name="realtime-client-keepalive")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def ping(self, timeout: float = 5.0) -> float:
        """Send `ping` and wait for its `pong`; the round trip in ms."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pongs.append(future)
        t0 = time.monotonic()
        try:
            await self._send(Ping())
            await asyncio.wait_for(asyncio.shield(future), timeout)
        finally:
            if future in self._pongs:
                self._pongs.remove(future)
        return 1000.0 * (time.monotonic() - t0)

    def on_pong(self) -> None:
        """A `pong` came: it answers the oldest ping still waiting."""
        while self._pongs:
            future = self._pongs.pop(0)
            if not future.done():
                future.set_result(None)
                return

    def connection_lost(self, reason: str) -> None:
        for future in self._pongs:
            if not future.done():
                future.set_exception(ConnectionLost(reason))
                future.exception()  # retrieved: the waiting ping() raises it
        self._pongs.clear()

    async def _run(self) -> None:
        while self._interval_s is not None:
            delay = self.last_sent + self._interval_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
                continue
            if not self._idle():
                self.sent()  # nothing to keep alive now: look again one interval on
                continue
            try:
                await self._send(Ping())
                self.pings += 1
            except ConnectionLost:
                log.debug("keepalive ping on a closed connection")
                self.sent()


def idle_timeout_s(hello: Hello) -> float | None:
    """`hello.limits.idle_timeout_s` (None when absent or 0: the server closes no idle
    connection)."""
    value = hello.limits.idle_timeout_s
    return float(value) if value else None
