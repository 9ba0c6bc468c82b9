"""What a bench's client receives, timed: audio frames and server messages as they arrive.

Thread: the event loop of the bench's client.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from protocol import ServerMessage, decode_server, unpack_frame


@dataclass(frozen=True, slots=True)
class Audio:
    """One binary frame: its stream and its seconds of 16-bit PCM at 24 kHz
    (the format and rate the benches ask for)."""

    stream: int
    seconds: float


async def arrivals(ws: ClientConnection) -> AsyncIterator[tuple[float, Audio | ServerMessage]]:
    """(monotonic arrival time, frame or message) until the connection closes."""
    try:
        async for raw in ws:
            now = time.monotonic()
            if isinstance(raw, bytes):
                header, payload = unpack_frame(raw)
                yield now, Audio(header.stream, len(payload) / 2 / 24000)
            else:
                yield now, decode_server(raw)
    except ConnectionClosed:
        pass
