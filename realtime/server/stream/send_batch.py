"""A WebSocket connection whose queued messages leave in one system call.

websockets' ``send`` writes every message to the transport on its own, and
the transport tries to send each write at once: one ``send`` system call
(and, on loopback, the receiver's TCP work and wake-up) per audio frame and
per ``words`` message, plus an async context manager per message. The
outbox usually holds several messages when its writer runs (a model step
pushes a dozen frames, words before them), so ``StreamConnection.send_all``
has websockets' sans-I/O connection frame them all (``send_text``,
``send_binary``: the framing, extensions included, stays websockets') and
hands the bytes to the transport with one ``writelines`` (a single
``writev`` on uvloop). Instructions a frame (callgrind, ``python -m bench
server --timestamps --callgrind``, tone runner, 100 ms frames): 113k with
this batch, 137k sending each message through ``send``; the event loop's
share 68k and 92k (docs/server.md).

The bytes on the wire are the ones ``send`` would have written, in the same
order (a ping, pong or close frame websockets writes itself goes before or
after a batch, never inside one). Backpressure stays where it was: ``room``
is what the transport takes before its high-water mark (websockets'
``write_limit``), and nothing while websockets has paused writing (the
client is slow), the transport is closing or the connection is not open:
the outbox then uses ``send``, one message at a time, and waits as before.

The connection is websockets' ``ServerConnection``, through ``serve``'s
documented ``create_connection`` hook (a subclass); of its sans-I/O
connection (``protocol``) it uses the public ``state``, ``send_text``,
``send_binary`` and ``data_to_send``.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.protocol import State
from websockets.server import ServerProtocol

log = logging.getLogger(__name__)

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
        for data, text in messages:
            if text:
                wire.send_text(data)
            else:
                wire.send_binary(data)
        self._writer.writelines(wire.data_to_send())
