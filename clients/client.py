"""`RealtimeClient`: one WebSocket connection to the server, many utterances over it.

    async with RealtimeClient("ws://127.0.0.1:8765/v1/stream", token=None) as client:
        utt = await client.speak("Hello there. How are you?")
        async for item in utt:
            ...

The connection reads in one background task and hands each item to its utterance.
What each server frame means, and whether it keeps the protocol's ordering rules, is
`protocol.stream.ClientConnection`'s business; this module only moves bytes and
items. Not thread-safe: use one event loop.

Idle connections: a server that closes idle sockets states its timeout in
`hello.limits.idle_timeout_s`; between utterances the client sends `ping` often enough
that it never fires (`keepalive`). When the server closed the connection anyway, the
next `speak` reconnects (`reconnect`), and a speak the server never saw because the
close crossed it on the wire is sent again on the new connection; an utterance the
server had started ends with `ConnectionLost`, never silently.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import os
import time

from websockets.asyncio.client import ClientConnection as WsConnection
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from clients.errors import (
    ConnectionLost,
    DuplicateId,
    HandshakeRefused,
    ProtocolViolation,
    TTSError,
    from_message,
)
from clients.events import Flushed, Words
from clients.keepalive import Keepalive, idle_timeout_s
from clients.utterance import Utterance
from protocol import ClientMessage, Error, Hello, Params, ProtocolError, Speak, encode
from protocol.params import Refine
from protocol.stream import Audio, ClientConnection, Kind, Received, StreamViolation

log = logging.getLogger(__name__)

DEFAULT_URL = "ws://127.0.0.1:8765/v1/stream"
# A server's idle close: code 1000 with a reason (shutting down is 1001).
IDLE_CLOSE_CODE = 1000


class RealtimeClient:
    """An async context manager holding one connection.

    Args: `url` (ws:// or wss:// URL of /v1/stream), `token` (sent as
    `Authorization: Bearer`), `open_timeout` (seconds for connect + hello),
    `keepalive` (ping between utterances when the server states an idle timeout),
    `reconnect` (the next speak reconnects after the server closed the connection).
    After entering: `hello` (the server's `Hello`), `weights_warning` (a sentence when the
    server runs untrained weights, else None), `connect_ms` (handshake + hello time),
    `idle_timeout_s` (the server's, None when it states none), `reconnects`, `pings`.
    Raises `HandshakeRefused` (401/403) or OSError/TimeoutError on connect.
    """

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, *,
                 open_timeout: float = 10.0, keepalive: bool = True,
                 reconnect: bool = True) -> None:
        self.url = url
        self.token = token
        self.open_timeout = open_timeout
        self.keepalive = keepalive
        self.reconnect = reconnect
        self.idle_timeout_s: float | None = None
        self.reconnects = 0
        self.close_code: int | None = None  # of the last connection the server closed
        self.hello: Hello | None = None
        self.weights_warning: str | None = None
        self.connect_ms: float | None = None
        self.connection_errors: list[TTSError] = []
        self._ws: WsConnection | None = None
        self._wire = ClientConnection()
        self._reader: asyncio.Task | None = None
        self._by_id: dict[str, Utterance] = {}
        self._ids = itertools.count(1)
        self._prefix = f"u{os.getpid() % 10000}-{id(self) % 100000}"
        self._closed_reason: str | None = None
        self._closing = False  # close() was called: no reconnect, no replay
        self._alive = Keepalive(self._send, lambda: self.connected and not self._by_id)
        self._reconnect_lock = asyncio.Lock()

    # ---- lifecycle -----------------------------------------------------------------

    async def __aenter__(self) -> RealtimeClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def connect(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        self._wire = ClientConnection()
        self._closing = False
        t0 = time.monotonic()
        try:
            self._ws = await asyncio.wait_for(
                connect(self.url, additional_headers=headers, open_timeout=None,
                        max_size=4 * 1024 * 1024, compression=None),
                self.open_timeout)
        except InvalidStatus as exc:
            status = exc.response.status_code
            raise HandshakeRefused(f"server refused the handshake with HTTP {status}",
                                   status=status) from exc
        first = await asyncio.wait_for(self._ws.recv(), self.open_timeout)
        try:
            greeting = self._wire.receive(first)
        except (ProtocolError, StreamViolation) as exc:
            await self._ws.close()
            raise ProtocolViolation(f"expected hello: {exc}") from None
        hello = self._wire.hello
        if greeting.kind is not Kind.HELLO or hello is None:
            await self._ws.close()
            raise ProtocolViolation(f"expected hello, got {greeting.kind.value}")
        self.hello = hello
        self.idle_timeout_s = idle_timeout_s(hello)
        self.connect_ms = 1000.0 * (time.monotonic() - t0)
        self._closed_reason = None
        if hello.model.weights != "checkpoint":
            self.weights_warning = (
                f"server runs {hello.model.weights!r} weights: the audio is noise from "
                "untrained weights (fine for load tests, not for listening)")
            log.warning("%s", self.weights_warning)
        self._reader = asyncio.create_task(self._read_loop(self._ws),
                                           name="realtime-client-reader")
        if self.keepalive:
            self._alive.start(self.idle_timeout_s)

    async def close(self) -> None:
        self._closing = True
        await self._alive.stop()
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            try:
                await self._reader
            except Exception:  # already reported to the utterances
                log.debug("reader ended with an error", exc_info=True)
            self._reader = None

    @property
    def active(self) -> list[Utterance]:
        return list(self._by_id.values())

    @property
    def connected(self) -> bool:
        return self._ws is not None and self._closed_reason is None

    @property
    def pings(self) -> int:
        """Keepalive pings sent so far."""
        return self._alive.pings

    async def ping(self, timeout: float = 5.0) -> float:
        """Send `ping` and wait for `pong`; returns the round trip in ms."""
        return await self._alive.ping(timeout)

    async def _ensure_connected(self) -> None:
        """Reconnect when the server closed the connection and `reconnect` allows."""
        if self.connected:
            return
        if self._closing or not self.reconnect or self._ws is None:
            raise ConnectionLost(self._closed_reason or "not connected")
        async with self._reconnect_lock:
            if self.connected:
                return
            reader = self._reader
            if reader is not None:  # let the old reader finish its bookkeeping
                await asyncio.gather(reader, return_exceptions=True)
            log.info("reconnecting to %s (%s)", self.url, self._closed_reason)
            await self.connect()
            self.reconnects += 1

    # ---- requests ------------------------------------------------------------------

    def new_id(self) -> str:
        return f"{self._prefix}-{next(self._ids)}"

    async def speak(self, text: str, *, id: str | None = None, final: bool = True,
                    lane: str = "interactive", voice: str | None = None,
                    format: str = "pcm_s16le", sample_rate: int | None = None,
                    frame_ms: int = 100, chunking: str = "sentence",
                    deadline_ms: int | None = None, params: Params | None = None,
                    timestamps: bool = False, speed: int | None = None,
                    refine: Refine | None = None) -> Utterance:
        """Start an utterance and return its handle at once (before `started`).

        `timestamps=True` asks for word timings (`Words` items). `speed` (ChatTTS's
        level 0-9, the server's default 5) overrides `params.speed`, and `refine` (`True`,
        `RefineLevels(oral=2, ...)` or a prompt string: ChatTTS's refine-text pass;
        `False`: none) overrides `params.refine`. Refusals (overloaded,
        unsupported, ...) surface when the handle is iterated or `result()`/`started()`
        is awaited. Raises `DuplicateId` for an id still active here and
        `ConnectionLost` if the connection is gone and cannot be opened again.
        """
        if self._ws is None or self.hello is None:
            raise ConnectionLost("not connected")
        await self._ensure_connected()
        assert self.hello is not None
        uid = id or self.new_id()
        rate = sample_rate or self.hello.sample_rate
        msg = Speak(id=uid, text=text, final=final, lane=lane, deadline_ms=deadline_ms,
                    voice=voice, format=format, sample_rate=rate, frame_ms=frame_ms,
                    chunking=chunking, params=_with_controls(params or Params(), speed, refine),
                    timestamps=timestamps)
        try:
            self._wire.opened(uid)
        except ValueError:
            raise DuplicateId("id is still active on this connection", id=uid) from None
        utt = Utterance(id=uid, format=format, sample_rate=rate, lane=lane, final=final,
                        _send=self._send, speak_message=msg)
        self._by_id[uid] = utt
        try:
            await self._send_speak(utt)
        except ConnectionLost:
            if not self.reconnect:
                self._by_id.pop(uid, None)
                raise
            # The server's close crossed this speak: the reader, ending, sends it again
            # after an idle close or ends it with ConnectionLost.
            log.debug("speak %s met a closing connection", uid)
        except TTSError:
            self._by_id.pop(uid, None)
            raise
        return utt

    async def _send_speak(self, utt: Utterance) -> None:
        """The utterance's speak, with the text appended so far (a replay sends it on a
        new connection: the server never saw the first one)."""
        msg = utt.speak_message
        assert msg is not None
        if utt.appended:
            msg = dataclasses.replace(msg, text=msg.text + "".join(utt.appended), final=utt.final)
        await self._send(msg)
        utt.sent_at = time.monotonic()

    async def _send(self, msg: ClientMessage) -> None:
        # Client -> server frames are text frames: send the JSON as str, not bytes.
        if self._ws is None:
            raise ConnectionLost("not connected")
        try:
            await self._ws.send(encode(msg).decode())
        except ConnectionClosed as exc:
            raise ConnectionLost(f"connection closed: {exc}") from exc
        self._alive.sent()

    # ---- reading -------------------------------------------------------------------

    async def _read_loop(self, ws: WsConnection) -> None:
        reason = "connection closed"
        try:
            async for frame in ws:
                self._on_frame(frame)
        except ConnectionClosed as exc:
            reason = f"connection closed: {exc}"
        except Exception as exc:
            reason = f"reader failed: {exc!r}"
            log.exception("client reader failed")
        finally:
            code = ws.close_code
            if code is not None:
                reason = f"connection closed (code {code} {ws.close_reason})".strip()
            self.close_code = code
            self._closed_reason = reason
            self._after_close(code, reason)

    def _after_close(self, code: int | None, reason: str) -> None:
        """End what the closed connection carried. After an idle close the server had
        seen no message of ours for its timeout, so a speak it never started never
        reached it: those are sent again on a new connection."""
        utterances, self._by_id = list(self._by_id.values()), {}
        self._alive.connection_lost(reason)
        # Once only: a server that closes on every speak is not closing an idle socket.
        replay = [u for u in utterances
                  if u.started_at is None and not u._cancel_sent and not u.replayed]
        if code != IDLE_CLOSE_CODE or self._closing or not self.reconnect or not replay:
            replay = []
        for utt in utterances:
            if utt not in replay:
                utt._on_terminal(ConnectionLost(reason, id=utt.id))
        if replay:
            log.info("server closed an idle connection (%s); resending %d speak(s)", reason,
                     len(replay))
            for utt in replay:
                self._by_id[utt.id] = utt
            asyncio.get_running_loop().create_task(self._replay(replay, reason),
                                                   name="realtime-client-replay")

    async def _replay(self, utterances: list[Utterance], reason: str) -> None:
        try:
            await self._ensure_connected()
            for utt in utterances:
                utt.replayed = True
                self._wire.opened(utt.id)
                await self._send_speak(utt)
        except (TTSError, OSError, TimeoutError) as exc:
            for utt in utterances:
                if self._by_id.pop(utt.id, None) is not None:
                    utt._on_terminal(ConnectionLost(f"{reason}; reconnect failed: {exc}",
                                                    id=utt.id))

    def _on_frame(self, frame: str | bytes) -> None:
        now = time.monotonic()
        try:
            item = self._wire.receive(frame)
        except StreamViolation as exc:
            self._violation(exc)
            return
        except ProtocolError as exc:  # a malformed message: skip it, keep reading
            log.warning("server message skipped: %s", exc)
            return
        if item.kind is Kind.PONG:
            self._alive.on_pong()
            return
        if item.kind is Kind.CONNECTION_ERROR:
            assert isinstance(item.message, Error)
            error = from_message(item.message)
            log.warning("connection-level error: %s", error)
            self.connection_errors.append(error)
            return
        utt = self._by_id.get(item.id) if item.id is not None else None
        if utt is None:
            log.debug("%s item for no utterance of ours dropped", item.kind.value)
            return
        self._deliver(utt, item, now)

    def _deliver(self, utt: Utterance, item: Received, now: float) -> None:
        message = item.message
        if item.kind is Kind.AUDIO:
            assert isinstance(message, Audio)
            utt._on_audio(message, now)
        elif item.kind is Kind.STARTED:
            utt._on_started(message)  # type: ignore[arg-type]
        elif item.kind is Kind.SEGMENT:
            utt._on_segment(message)  # type: ignore[arg-type]
        elif item.kind is Kind.WORDS:
            assert isinstance(message, Words)
            utt._on_words(message, now)
        elif item.kind is Kind.FLUSHED:
            assert isinstance(message, Flushed)
            utt._on_flushed(message)
        elif item.kind is Kind.NOTICE:
            utt._on_refusal(from_message(message))
        elif item.kind is Kind.END:
            del self._by_id[utt.id]
            outcome = from_message(message) if isinstance(message, Error) else message
            utt._on_terminal(outcome)  # type: ignore[arg-type]

    def _violation(self, exc: StreamViolation) -> None:
        """The server broke an ordering rule: fail the utterance it concerns."""
        log.error("protocol violation: %s", exc)
        utt = self._by_id.get(exc.id) if exc.id is not None else None
        if utt is None:
            self.connection_errors.append(ProtocolViolation(str(exc)))
        else:
            del self._by_id[utt.id]
            utt._fail(ProtocolViolation(str(exc), id=exc.id))


__all__ = ["DEFAULT_URL", "IDLE_CLOSE_CODE", "RealtimeClient"]


def _with_controls(params: Params, speed: int | None, refine: Refine | None) -> Params:
    if speed is not None:
        params = dataclasses.replace(params, speed=speed)
    return params if refine is None else dataclasses.replace(params, refine=refine)
