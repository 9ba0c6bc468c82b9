"""The bounded send queue of one connection.

Messages wait here until the connection's writer task hands them to
websockets. Audio frames count against ``limit_bytes``; when a client stops
reading, the socket buffers fill, ``send`` blocks, the queue grows, and the
first audio frame over the limit calls ``on_overflow`` so the session can stop
the utterances whose audio is stuck (``slow_consumer``). ``purge`` removes one
owner's queued audio and the control messages queued as that owner's (an
utterance's ``segment`` messages, which must not arrive without their frames);
other control messages are never dropped.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable

from websockets.exceptions import ConnectionClosed

log = logging.getLogger(__name__)


class Outbox:
    def __init__(self, send: Callable[..., Awaitable[None]], limit_bytes: int,
                 on_overflow: Callable[[], None]) -> None:
        self._send = send  # websockets' connection.send(message, text=...)
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

    async def run(self) -> None:
        """The writer task: send in order until closed or the connection drops."""
        send = self._send
        try:
            while not self._closed:
                items = self._items  # purge() may have replaced the deque
                if not items:
                    self._idle.set()
                    self._writer_idle = True
                    self._wake.clear()
                    await self._wake.wait()
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
