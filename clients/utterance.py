"""One utterance as the client sees it: a handle that yields audio and events.

An `Utterance` is created by `RealtimeClient.speak`. The connection's reader task feeds
it items that already passed the protocol's ordering checks (`_on_started`,
`_on_audio`, `_on_segment`, `_on_words`, `_on_flushed`, `_on_refusal`, `_on_terminal`);
the caller iterates it:

    async for item in utterance:      # AudioChunk, Segment, Words, Flushed, then Done
        ...
    done = await utterance.result()   # Done; raises TTSError subclasses

Everything here runs on the event loop of the connection; nothing is thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from clients.errors import InputClosed, TTSError, UtteranceCancelled
from clients.events import Flushed, Word, Words, words_started_before
from clients.opus import OpusDecoder
from protocol import (
    OPUS_FORMAT,
    Append,
    Cancel,
    Cancelled,
    ClientMessage,
    Done,
    Flush,
    Segment,
    Speak,
    Started,
    WordStart,
)
from protocol.pcm import BYTES_PER_SAMPLE, decode_samples, encode_samples
from protocol.stream import Audio

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """One binary audio frame of an utterance.

    `pcm` holds the payload bytes in `format` at `sample_rate`; `samples` decodes them to
    float32 in [-1, 1]. `received_at` is `time.monotonic()` when the frame was read.
    For an utterance in format "opus" the client decodes the packets: `pcm` is then
    pcm_s16le and `opus` the frame's payload as received (clients/opus.py).
    """

    pcm: bytes
    format: str
    sample_rate: int
    segment: int
    seq: int
    last_in_segment: bool
    last_in_utterance: bool
    received_at: float
    opus: bytes | None = None

    @property
    def samples(self) -> np.ndarray:
        return decode_samples(self.pcm, self.format)

    @property
    def sample_count(self) -> int:
        return len(self.pcm) // BYTES_PER_SAMPLE[self.format]

    @property
    def duration_ms(self) -> float:
        return 1000.0 * self.sample_count / self.sample_rate


_END = object()  # queue sentinel: no more items after this one


@dataclass(eq=False)
class Utterance:
    """A running utterance; async-iterate it for `AudioChunk`, `Segment`, `Words` (when
    spoken with `timestamps=True`), `Flushed`, and finally `Done`.

    Iteration ends after `Done` or `Cancelled` (both yielded), and raises the `TTSError`
    subclass of an `error`. `result()` waits for the end without consuming the items.
    `words` collects every word timing so far, `spoken` the text as the model read it,
    `unspoken` (after `done`) the sentences it could not speak.
    """

    id: str
    format: str
    sample_rate: int
    lane: str
    final: bool
    _send: Callable[[ClientMessage], Awaitable[None]] = field(repr=False)
    stream: int | None = None
    sent_at: float = field(default_factory=time.monotonic)
    started_at: float | None = None
    first_audio_at: float | None = None
    ended_at: float | None = None
    audio_samples: int = 0
    frames: int = 0
    segments: list[Segment] = field(default_factory=list)
    refusals: list[TTSError] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    # monotonic, per word: when its start first came (in a `pending` list, or with it)
    words_received_at: list[float] = field(default_factory=list)
    pending: list[WordStart] = field(default_factory=list)  # begun, end not known yet
    # What was sent, so a speak the server never saw can be sent again (RealtimeClient
    # replays it on a new connection after an idle close).
    speak_message: Speak | None = field(default=None, repr=False)
    appended: list[str] = field(default_factory=list, repr=False)
    replayed: bool = False  # its speak was sent again on a new connection
    _flushes: dict[str, asyncio.Future[Flushed | None]] = field(default_factory=dict, repr=False)
    _pending_at: list[float] = field(default_factory=list, repr=False)  # per pending word
    _queue: asyncio.Queue[object] = field(default_factory=asyncio.Queue, repr=False)
    _terminal: asyncio.Future[Done | Cancelled | TTSError] = field(init=False, repr=False)
    _started: asyncio.Future[Started | None] = field(init=False, repr=False)
    _cancel_sent: bool = False
    _opus: OpusDecoder | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        loop = asyncio.get_running_loop()
        self._terminal = loop.create_future()
        self._started = loop.create_future()

    # ---- caller side -------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self._terminal.done()

    @property
    def first_audio_ms(self) -> float | None:
        """Client-measured time from sending `speak` to the first audio frame."""
        if self.first_audio_at is None:
            return None
        return 1000.0 * (self.first_audio_at - self.sent_at)

    @property
    def audio_ms(self) -> float:
        return 1000.0 * self.audio_samples / self.sample_rate

    @property
    def spoken(self) -> str:
        """The text as the model read it, segment by segment so far (a segment's
        original text where the server does not report `spoken`)."""
        return " ".join(s.spoken or s.text for s in self.segments)

    @property
    def unspoken(self) -> tuple[str, ...]:
        """Sentences of the input the server could not speak (known at `done`)."""
        outcome = self._terminal.result() if self._terminal.done() else None
        return outcome.unspoken if isinstance(outcome, Done) else ()

    def heard_words(self, audio_ms: float | None = None) -> list[Word]:
        """The words that had started by `audio_ms` of audio (default: all audio
        received): what a listener stopped there has heard, within one word."""
        return words_started_before(self.words, self.audio_ms if audio_ms is None else audio_ms)

    async def started(self) -> Started | None:
        """Wait for `started`; raises the utterance's error if it was refused."""
        return await asyncio.shield(self._started)

    async def append(self, text: str, final: bool = False) -> None:
        """Send more text (only for an utterance opened with `final=False`)."""
        if self.final:
            raise InputClosed("input already ended with final=true", id=self.id)
        if self.finished:
            raise InputClosed("utterance already ended", id=self.id)
        self.final = final
        self.appended.append(text)
        await self._send(Append(id=self.id, text=text, final=final))

    async def end_input(self) -> None:
        """End a streamed input: synthesize what is buffered and finish after it."""
        await self.append("", final=True)

    async def flush(self, flush_id: str | None = None, *, wait: bool = False) -> Flushed | None:
        """Ask the server to synthesize the text buffered so far, sentence end or not.

        With a `flush_id` (1-64 id characters; `wait=True` makes one) the server answers
        `flushed` once all audio of that text has been sent; `wait=True` waits for it
        (see `flushed`). Returns the `Flushed`, or None without waiting.
        """
        if self.final or self.finished:
            raise InputClosed("input already ended", id=self.id)
        if flush_id is None and wait:
            flush_id = f"f{len(self._flushes) + 1}"
        if flush_id is not None:
            self._flushes.setdefault(flush_id, asyncio.get_running_loop().create_future())
        await self._send(Flush(id=self.id, flush_id=flush_id))
        return await self.flushed(flush_id) if wait and flush_id is not None else None

    async def flushed(self, flush_id: str) -> Flushed | None:
        """Wait for the `flushed` answering `flush_id`. Returns it, or None when the
        utterance completed first (its audio was then all sent); raises
        `UtteranceCancelled` or the error when it ended otherwise."""
        future = self._flushes.get(flush_id)
        if future is None:
            raise KeyError(f"no flush {flush_id!r} was sent on {self.id}")
        return await asyncio.shield(future)

    async def cancel(self) -> None:
        """Barge-in: stop at once. Audio still in flight is dropped locally."""
        if self.finished or self._cancel_sent:
            return
        self._cancel_sent = True
        await self._send(Cancel(id=self.id))

    async def result(self) -> Done:
        """Wait for the end. Returns `Done`; raises `UtteranceCancelled` or the error."""
        outcome = await asyncio.shield(self._terminal)
        if isinstance(outcome, Done):
            return outcome
        if isinstance(outcome, Cancelled):
            raise UtteranceCancelled("utterance cancelled", id=self.id)
        raise outcome

    def __aiter__(self) -> AsyncIterator[object]:
        return self._items()

    async def _items(self) -> AsyncIterator[object]:
        while True:
            item = await self._queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    async def audio(self) -> AsyncIterator[AudioChunk]:
        """Only the audio chunks; raises like iteration does, returns at the end."""
        async for item in self:
            if isinstance(item, AudioChunk):
                yield item

    async def collect(self) -> tuple[bytes, Done]:
        """All audio bytes of the utterance and its `Done` (raises on error/cancel)."""
        parts = [chunk.pcm async for chunk in self.audio()]
        return b"".join(parts), await self.result()

    # ---- reader side (called by the connection) ----------------------------------

    def _on_started(self, msg: Started) -> None:
        self.stream = msg.stream
        self.format = msg.format
        self.sample_rate = msg.sample_rate
        self.lane = msg.lane
        if msg.format == OPUS_FORMAT:
            self._opus = OpusDecoder(msg.sample_rate, msg.pre_skip or 0)
        self.started_at = time.monotonic()
        if not self._started.done():
            self._started.set_result(msg)

    def _on_audio(self, audio: Audio, now: float) -> None:
        """One frame, already checked against the ordering rules."""
        if self._cancel_sent:
            return  # barge-in: the caller asked for silence now
        if self.first_audio_at is None:
            self.first_audio_at = now
        h = audio.header
        if self._opus is not None:
            samples = self._opus.decode(audio.payload, h.segment_end)
            chunk = AudioChunk(encode_samples(samples, "pcm_s16le"), "pcm_s16le", self.sample_rate,
                               h.segment, h.seq, h.segment_end, h.utterance_end, now,
                               opus=bytes(audio.payload))
        else:
            chunk = AudioChunk(bytes(audio.payload), self.format, self.sample_rate, h.segment,
                               h.seq, h.segment_end, h.utterance_end, now)
        self.frames += 1
        self.audio_samples += chunk.sample_count
        self._queue.put_nowait(chunk)

    def _on_segment(self, msg: Segment) -> None:
        self.segments.append(msg)
        self._queue.put_nowait(msg)

    def _on_words(self, msg: Words, now: float) -> None:
        if self._cancel_sent:
            return
        # Pending words come again first, in order: their starts came earlier.
        announced = self._pending_at
        self.words.extend(msg.words)
        self.words_received_at.extend(announced[i] if i < len(announced) else now
                                      for i in range(len(msg.words)))
        kept = announced[len(msg.words):]
        self._pending_at = kept + [now] * (len(msg.pending) - len(kept))
        self.pending = list(msg.pending)
        self._queue.put_nowait(msg)

    def _on_flushed(self, msg: Flushed) -> None:
        future = self._flushes.get(msg.flush_id)
        if future is None:
            future = self._flushes[msg.flush_id] = asyncio.get_running_loop().create_future()
        if not future.done():
            future.set_result(msg)
        self._queue.put_nowait(msg)

    def _on_refusal(self, exc: TTSError) -> None:
        """An error that refuses one message but leaves the utterance running."""
        log.warning("utterance %s: %s", self.id, exc)
        self.refusals.append(exc)

    def _on_terminal(self, outcome: Done | Cancelled | TTSError) -> None:
        if self._terminal.done():
            log.warning("utterance %s: second terminal message %r ignored", self.id, outcome)
            return
        self.ended_at = time.monotonic()
        self._terminal.set_result(outcome)
        if not self._started.done():
            if isinstance(outcome, TTSError):
                self._started.set_exception(outcome)
                self._started.exception()  # mark retrieved: result() reports it too
            else:
                self._started.set_result(None)
        for future in self._flushes.values():
            if future.done():
                continue
            if isinstance(outcome, Done):
                future.set_result(None)  # all its audio was sent; no ack came first
            else:
                future.set_exception(outcome if isinstance(outcome, TTSError)
                                     else UtteranceCancelled("utterance cancelled", id=self.id))
                future.exception()  # retrieved: result() reports the outcome too
        # Iteration yields Done/Cancelled as the last item, or raises the error.
        self._queue.put_nowait(outcome)
        self._queue.put_nowait(_END)

    def _fail(self, exc: TTSError) -> None:
        self._on_terminal(exc)
