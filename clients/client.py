"""`RealtimeClient`: one WebSocket connection to the server, many utterances over it.

    async with RealtimeClient("ws://127.0.0.1:8765/v1/stream", token=None) as client:
        utt = await client.speak("Hello there. How are you?")
        async for item in utt:
            ...

The connection reads in one background task and hands each message to its utterance:
text messages by `id`, binary frames by the `stream` number from `started`. The wire
work is done by `protocol/` (decode_server, encode, unpack_frame); this module only
moves messages. Not thread-safe: use one event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from clients.errors import (
    ConnectionLost,
    DuplicateId,
    HandshakeRefused,
    ProtocolViolation,
    TTSError,
    from_message,
)
from clients.utterance import Utterance
from protocol import (
    FLAG_SEGMENT_END,
    FLAG_UTTERANCE_END,
    Cancelled,
    Done,
    Error,
    ErrorCode,
    Hello,
    Params,
    ProtocolError,
    Segment,
    Speak,
    Started,
    decode_server,
    encode,
    unpack_frame,
)

log = logging.getLogger(__name__)

DEFAULT_URL = "ws://127.0.0.1:8765/v1/stream"

# Errors that refuse one message but leave the utterance they name running.
_NON_TERMINAL = {ErrorCode.DUPLICATE_ID.value, ErrorCode.INPUT_CLOSED.value}


class RealtimeClient:
    """An async context manager holding one connection.

    Args: `url` (ws:// or wss:// URL of /v1/stream), `token` (sent as
    `Authorization: Bearer`), `open_timeout` (seconds for connect + hello).
    After entering: `hello` (the server's `Hello`), `weights_warning` (a sentence when the
    server runs untrained weights, else None), `connect_ms` (handshake + hello time).
    Raises `HandshakeRefused` (401/403) or OSError/TimeoutError on connect.
    """

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, *,
                 open_timeout: float = 10.0) -> None:
        self.url = url
        self.token = token
        self.open_timeout = open_timeout
        self.hello: Hello | None = None
        self.weights_warning: str | None = None
        self.connect_ms: float | None = None
        self.connection_errors: list[TTSError] = []
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task | None = None
        self._by_id: dict[str, Utterance] = {}
        self._by_stream: dict[int, Utterance] = {}
        self._ids = itertools.count(1)
        self._prefix = f"u{os.getpid() % 10000}-{id(self) % 100000}"
        self._closed_reason: str | None = None

    # ---- lifecycle -----------------------------------------------------------------

    async def __aenter__(self) -> RealtimeClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def connect(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
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
        hello = decode_server(first)
        if not isinstance(hello, Hello):
            await self._ws.close()
            raise ProtocolViolation(f"expected hello, got {type(hello).__name__}")
        self.hello = hello
        self.connect_ms = 1000.0 * (time.monotonic() - t0)
        if hello.model.weights != "checkpoint":
            self.weights_warning = (
                f"server runs {hello.model.weights!r} weights: the audio is noise from "
                "untrained weights (fine for load tests, not for listening)")
            log.warning("%s", self.weights_warning)
        self._reader = asyncio.create_task(self._read_loop(), name="realtime-client-reader")

    async def close(self) -> None:
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

    # ---- requests ------------------------------------------------------------------

    def new_id(self) -> str:
        return f"{self._prefix}-{next(self._ids)}"

    async def speak(self, text: str, *, id: str | None = None, final: bool = True,
                    lane: str = "interactive", voice: str | None = None,
                    format: str = "pcm_s16le", sample_rate: int | None = None,
                    frame_ms: int = 100, chunking: str = "sentence",
                    deadline_ms: int | None = None, params: Params | None = None) -> Utterance:
        """Start an utterance and return its handle at once (before `started`).

        Refusals (overloaded, unsupported, ...) surface when the handle is iterated or
        `result()`/`started()` is awaited. Raises `DuplicateId` for an id still active
        here and `ConnectionLost` if the connection is gone.
        """
        if self._ws is None or self.hello is None:
            raise ConnectionLost("not connected")
        if self._closed_reason is not None:
            raise ConnectionLost(self._closed_reason)
        uid = id or self.new_id()
        if uid in self._by_id:
            raise DuplicateId("id is still active on this connection", id=uid)
        rate = sample_rate or self.hello.sample_rate
        msg = Speak(id=uid, text=text, final=final, lane=lane, deadline_ms=deadline_ms,
                    voice=voice, format=format, sample_rate=rate, frame_ms=frame_ms,
                    chunking=chunking, params=params or Params())
        utt = Utterance(id=uid, format=format, sample_rate=rate, lane=lane, final=final,
                        _send=self._send)
        self._by_id[uid] = utt
        try:
            await self._send(msg)
        except TTSError:
            self._by_id.pop(uid, None)
            raise
        utt.sent_at = time.monotonic()
        return utt

    async def _send(self, msg) -> None:
        # Client -> server frames are text frames: send the JSON as str, not bytes.
        try:
            await self._ws.send(encode(msg).decode())
        except ConnectionClosed as exc:
            raise ConnectionLost(f"connection closed: {exc}") from exc

    # ---- reading -------------------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = "connection closed"
        try:
            async for frame in self._ws:
                if isinstance(frame, bytes):
                    self._on_binary(frame)
                else:
                    self._on_text(frame)
        except ConnectionClosed as exc:
            reason = f"connection closed: {exc}"
        except Exception as exc:
            reason = f"reader failed: {exc!r}"
            log.exception("client reader failed")
        finally:
            code = self._ws.close_code if self._ws is not None else None
            if code is not None:
                reason = f"connection closed (code {code} {self._ws.close_reason})".strip()
            self._closed_reason = reason
            for utt in list(self._by_id.values()):
                utt._on_terminal(ConnectionLost(reason, id=utt.id))
            self._by_id.clear()
            self._by_stream.clear()

    def _on_binary(self, frame: bytes) -> None:
        now = time.monotonic()
        header, payload = unpack_frame(frame)
        utt = self._by_stream.get(header.stream)
        if utt is None:
            log.debug("audio for unknown stream %s dropped", header.stream)
            return
        utt._on_audio(bool(header.flags & FLAG_SEGMENT_END),
                      bool(header.flags & FLAG_UTTERANCE_END),
                      header.segment, header.seq, bytes(payload), now)

    def _on_text(self, frame: str) -> None:
        try:
            msg = decode_server(frame)
        except ProtocolError as exc:
            # A newer server's message type, or a malformed one: skip it, keep reading.
            log.warning("server message skipped: %s", exc)
            return
        if isinstance(msg, Error) and msg.id is None:
            exc = from_message(msg)
            log.warning("connection-level error: %s", exc)
            self.connection_errors.append(exc)
            return
        utt = self._by_id.get(getattr(msg, "id", None))
        if utt is None:
            log.debug("message for unknown utterance dropped: %r", msg)
            return
        if isinstance(msg, Started):
            self._by_stream[msg.stream] = utt
            utt._on_started(msg)
        elif isinstance(msg, Segment):
            utt._on_segment(msg)
        elif isinstance(msg, Error) and msg.code in _NON_TERMINAL:
            utt._on_refusal(from_message(msg))
        elif isinstance(msg, (Done, Cancelled, Error)):
            outcome = from_message(msg) if isinstance(msg, Error) else msg
            self._finish(utt, outcome)
        else:
            log.debug("unexpected message %r", msg)

    def _finish(self, utt: Utterance, outcome) -> None:
        self._by_id.pop(utt.id, None)
        if utt.stream is not None:
            self._by_stream.pop(utt.stream, None)
        utt._on_terminal(outcome)


__all__ = ["DEFAULT_URL", "RealtimeClient"]
