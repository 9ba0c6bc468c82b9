"""The bounded send queue of one connection.

Messages wait here until the connection's writer task hands them to
websockets. Audio frames count against ``limit_bytes``; when a client stops
reading, the socket buffers fill, ``send`` blocks, the queue grows, and the
first audio frame over the limit calls ``on_overflow`` so the session can stop
the utterances whose audio is stuck (``slow_consumer``). ``purge`` removes one
owner's queued audio and the control messages queued as that owner's (an
utterance's ``segment`` messages, which must not arrive without their frames);
other control messages are never dropped.

With a ``batch`` (``realtime.server.stream.send_batch.StreamConnection``), the writer
takes every message queued, up to the ``room`` the connection has before
its high-water mark, and writes them together (one system call, nothing
waits); while the connection has no room (the client is slow) it sends one
message at a time and waits, as without one, so the bytes between the
outbox and the socket stay bounded by the same ``write_limit`` and at most
one message is out of ``purge``'s reach.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from websockets.exceptions import ConnectionClosed

log = logging.getLogger(__name__)


class Batch(Protocol):
    """What sends several messages at once (``StreamConnection``)."""

    def room(self) -> int:
        """Bytes that may go now; 0: send one message and wait for it."""
    def send_all(self, messages: Sequence[tuple[bytes, bool]]) -> None:
        """(payload, is_text) messages, in order, for at most ``room()`` bytes;
        written at once (it never waits)."""


class Outbox:
    def __init__(self, send: Callable[..., Awaitable[None]], limit_bytes: int,
                 on_overflow: Callable[[], None], batch: Batch | None = None) -> None:
        self._send = send  # websockets' connection.send(message, text=...)
        self._batch = batch
        self.limit_bytes = limit_bytes
        self._on_overflow = on_overflow
        # (owner or None for control, payload, is_text)
        self._items: collections.deque[tuple[object | None, bytes, bool]] = collections.deque()
        self.queued_bytes = 0
        self.audio_bytes = 0
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._writer_idle = True  # mirrors _idle.is_set() without a method call per frame
        self._closed = False
        self._overflowing = False

    def put_control(self, data: bytes, owner: object | None = None) -> None:
        """A JSON text message; dropped only by ``purge(owner)`` when it has one."""
        if self._closed:
            return
        self._items.append((owner, data, True))
        self.queued_bytes += len(data)
        if self._writer_idle:  # as for audio: a writer awake sees it without a kick
            self._kick()

    def put_audio(self, owner: object, data: bytes) -> None:
        """A binary frame of ``owner``'s audio; may trigger ``on_overflow``.

        Called once per frame, so it does only the bookkeeping: a burst of
        frames wakes the writer once (the first frame), not once per frame.
        """
        if self._closed:
            return
        self._items.append((owner, data, False))
        size = len(data)
        self.queued_bytes += size
        self.audio_bytes += size
        if self._writer_idle:  # the writer sleeps (or is about to): wake it
            self._kick()
        if self.audio_bytes > self.limit_bytes and not self._overflowing:
            self._overflowing = True  # on_overflow purges; don't re-enter
            try:
                self._on_overflow()
            finally:
                self._overflowing = False

    def purge(self, owner: object) -> int:
        """Drop ``owner``'s queued audio and messages; return the audio bytes dropped."""
        if not self._items:
            return 0
        kept: collections.deque[tuple[object | None, bytes, bool]] = collections.deque()
        dropped = audio = 0
        for item in self._items:
            if item[0] is owner:
                dropped += len(item[1])
                audio += 0 if item[2] else len(item[1])
            else:
                kept.append(item)
        self._items = kept
        self.queued_bytes -= dropped
        self.audio_bytes -= audio
        return audio

    def owners_with_audio(self) -> list[object]:
        owners: dict[int, object] = {}
        for owner, _, text in self._items:
            if owner is not None and not text:
                owners.setdefault(id(owner), owner)
        return list(owners.values())

    def close(self) -> None:
        self._closed = True
        self._items.clear()
        self.queued_bytes = self.audio_bytes = 0
        self._wake.set()

    async def wait_flushed(self) -> None:
        """Until everything queued so far has been handed to the socket."""
        await self._idle.wait()

    def _kick(self) -> None:
        # Invariant: while _idle is clear, _wake is set (the writer only
        # clears _wake after setting _idle), so a clear _idle means the writer
        # will see the new item without another kick.
        self._idle.clear()
        self._writer_idle = False
        self._wake.set()

    def _take(self, items: collections.deque[tuple[object | None, bytes, bool]],
              room: int) -> list[tuple[bytes, bool]]:
        """The queued messages that fit in ``room`` bytes (at least one), in order."""
        taken: list[tuple[bytes, bool]] = []
        size = audio = 0
        while items and size + len(items[0][1]) <= room:
            _, data, text = items.popleft()
            size += len(data)
            if not text:
                audio += len(data)
            taken.append((data, text))
        self.queued_bytes -= size
        self.audio_bytes -= audio
        return taken

    async def run(self) -> None:
        """The writer task: send in order until closed or the connection drops."""
        send, batch = self._send, self._batch
        try:
            while not self._closed:
                items = self._items  # purge() may have replaced the deque
                if not items:
                    self._idle.set()
                    self._writer_idle = True
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if batch is not None:
                    room = batch.room()
                    if room >= len(items[0][1]):
                        batch.send_all(self._take(items, room))
                        continue
                _, data, text = items.popleft()
                size = len(data)
                self.queued_bytes -= size
                if not text:
                    self.audio_bytes -= size
                # websockets' send() writes to the transport at once and only
                # suspends while the transport is paused (the client is slow):
                # a burst goes out without a trip through the event loop per frame.
                await send(data, text=text)
        except ConnectionClosed:
            pass
        finally:
            self._closed = True
            self._idle.set()
            self._writer_idle = True
