"""A WebSocket connection whose queued messages leave in one system call.

websockets' ``send`` writes every message to the transport on its own, and
the transport tries to send each write at once: one ``send`` system call
(and, on loopback, the receiver's TCP work and wake-up) per audio frame and
per ``words`` message, plus an async context manager per message. The
outbox usually holds several messages when its writer runs (a model step
pushes a dozen frames, words before them), so ``StreamConnection.send_all``
frames them all and hands the bytes to the transport with one
``writelines`` (a single ``writev`` on uvloop).

Framing: a server's data frame with no extension negotiated (the server
turns compression off) is fixed by RFC 6455, section 5.2: FIN and the opcode
in one byte, the payload length in 1, 3 or 9 more, no mask, then the payload.
``send_all`` writes that header itself and the payload as it is (no copy):
websockets' own framing (``Frame``, ``serialize``) was a fifth of the event
loop's work per audio frame and most of a ``words`` message's cost. Where an
extension was negotiated (the connection's ``extensions``, websockets'
sans-I/O ``protocol`` a ``ServerConnection`` is built with), websockets
frames each message (``send_text``, ``send_binary``, ``data_to_send``).

The bytes on the wire are the ones ``send`` would have written, in the same
order (tests compare them with websockets' framing; a ping, pong or close
frame websockets writes itself goes before or after a batch, never inside
one). Backpressure stays where it was: ``room`` is what the transport takes
before its high-water mark (websockets' ``write_limit``), and nothing while websockets
has paused writing (the client is slow), the transport is closing or the
connection is not open: the outbox then uses ``send``, one message at a
time, and waits as before.

The connection is websockets' ``ServerConnection``, through ``serve``'s
documented ``create_connection`` hook (a subclass); of its sans-I/O
connection it reads only the public ``state`` and ``extensions``.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.protocol import State
from websockets.server import ServerProtocol

log = logging.getLogger(__name__)

_TEXT, _BINARY = 0x81, 0x82  # FIN and the opcode: a whole text or binary message
_SHORT, _MEDIUM, _LONG = struct.Struct("!BB"), struct.Struct("!BBH"), struct.Struct("!BBQ")


def frame_header(text: bool, length: int) -> bytes:
    """An unmasked data frame's header, no extension (RFC 6455, 5.2)."""
    first = _TEXT if text else _BINARY
    if length < 126:
        return _SHORT.pack(first, length)
    if length < 65536:
        return _MEDIUM.pack(first, 126, length)
    return _LONG.pack(first, 127, length)


class StreamConnection(ServerConnection):
    """websockets' server connection with ``room`` and ``send_all`` (module docstring)."""

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        super().__init__(protocol, *args, **kwargs)
        self._wire = protocol  # the sans-I/O connection: it frames every message
        self._writer: Any = None  # uvloop's transports are no asyncio.Transport subclass
        self._writing_paused = False
        self._high_water = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # sets websockets' write limits on it
        self._writer = transport
        self._high_water = self._writer.get_write_buffer_limits()[1]

    def pause_writing(self) -> None:
        self._writing_paused = True
        super().pause_writing()

    def resume_writing(self) -> None:
        self._writing_paused = False
        super().resume_writing()

    def room(self) -> int:
        """Bytes ``send_all`` may take now without passing the transport's
        high-water mark; 0 while writing is paused, the transport closes or
        the connection is not open (then ``send`` it is, which waits or raises)."""
        writer = self._writer
        if (writer is None or self._writing_paused or writer.is_closing()
                or self._wire.state is not State.OPEN):
            return 0
        buffered: int = writer.get_write_buffer_size()
        return self._high_water - buffered

    def send_all(self, messages: Sequence[tuple[bytes, bool]]) -> None:
        """Send (payload, is_text) messages in order, written together. Only
        right after ``room()`` said they fit (nothing suspends in between)."""
        wire = self._wire
        if wire.extensions:  # websockets transforms each frame: it frames them
            for data, text in messages:
                if text:
                    wire.send_text(data)
                else:
                    wire.send_binary(data)
            self._writer.writelines(wire.data_to_send())
            return
        chunks: list[bytes] = []
        add = chunks.append
        for data, text in messages:
            add(frame_header(text, len(data)))
            add(data)
        self._writer.writelines(chunks)
