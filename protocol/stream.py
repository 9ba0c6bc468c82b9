"""The ordering rules of one utterance, as state machines for each side.

PROTOCOL.md's rules for an utterance's messages, defined once:

- ``started`` comes once, before any audio;
- audio frames carry ``seq`` 0, 1, 2, ... (contiguous) and the index of the
  segment being spoken; ``segment`` k follows the last frame of segment k
  (the one with the segment-end flag) and segment k+1's audio follows it;
- no audio follows the frame flagged as the utterance's last;
- exactly one terminal message (``done``, ``cancelled`` or a terminal
  ``error``) ends the utterance, and nothing of it follows;
- the errors in ``NON_TERMINAL_CODES`` refuse one message and end nothing;
- ``words`` of segment k come after ``started`` and before segment k's last
  frame, monotonic, and inside segment k's span (checked at its ``segment``);
  a ``pending`` word comes again with its start (``protocol.words.WordOrder``);
- ``flushed`` comes after ``started`` and before the terminal; ``pong`` names no utterance.

``UtteranceSender`` is the server's side: it builds the next message or frame
and raises ``StreamStateError`` when the caller asks for something the rules
forbid (a bug in the caller). ``ClientConnection`` is a client's side of one
connection: text and binary frames go in, ``Received`` items come out, each
naming its utterance and what it means; a server breaking a rule raises
``StreamViolation``. Neither touches a socket.

Thread: objects are used from one thread at a time.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from protocol.errors import NON_TERMINAL_CODES, ErrorCode, ProtocolError
from protocol.frames import (
    FLAG_SEGMENT_END,
    FLAG_UTTERANCE_END,
    FRAME_VERSION,
    HEADER,
    unpack_frame,
)
from protocol.messages import (
    Cancelled,
    Done,
    Error,
    Hello,
    Segment,
    Started,
    Timing,
)

# re-exported: clients read what they receive from here
from protocol.received import Audio as Audio
from protocol.received import Kind as Kind
from protocol.received import Received as Received
from protocol.server_codec import decode_server
from protocol.words import Flushed, Pong, TimedWords, WordOrder, Words, WordStart, columns_body, words_prefix

_pack_header = HEADER.pack
_U16 = 0xFFFF
# Word times are rounded to the microsecond on the wire; a span check allows that.
_MS_SLACK = 1e-3


class StreamStateError(RuntimeError):
    """The sender was asked for a message its utterance may not send now."""


class StreamViolation(Exception):
    """The server broke an ordering rule; ``id`` names the utterance (None
    for the connection)."""

    def __init__(self, message: str, id: str | None = None) -> None:  # noqa: A002 - the wire name
        super().__init__(message)
        self.id = id


class Phase(enum.Enum):
    PENDING = "pending"  # no started yet
    STREAMING = "streaming"  # started; audio and segments may come
    CLOSING = "closing"  # the utterance's last frame is out: no more audio
    ENDED = "ended"  # the terminal message is out


def ends_utterance(error: Error) -> bool:
    """Whether an ``error`` naming an utterance ends it."""
    return error.code not in NON_TERMINAL_CODES


# --- the server's side ------------------------------------------------------------------


class UtteranceSender:
    """What one utterance may send next, and the bytes of its audio frames.

    Build each message with the method of its name; every method raises
    ``StreamStateError`` when the rules forbid that message now.
    """

    __slots__ = ("id", "stream", "phase", "seq", "segments", "_segment_open", "_segment_closed",
                 "_words_prefix")

    def __init__(self, id: str, stream: int) -> None:  # noqa: A002 - the wire name
        self.id = id
        self.stream = stream
        self.phase = Phase.PENDING
        self.seq = 0  # frames sent
        self.segments = 0  # segment messages sent (the index of the segment being spoken)
        self._segment_open = False  # a frame of the current segment was sent
        self._segment_closed = False  # ... and the last one had the segment-end flag
        self._words_prefix: tuple[int, bytes] = (-1, b"")  # (segment, its words' prefix)

    @property
    def ended(self) -> bool:
        return self.phase is Phase.ENDED

    def started(self, lane: str, format: str, sample_rate: int,  # noqa: A002
                pre_skip: int | None = None) -> Started:
        if self.phase is not Phase.PENDING:
            raise StreamStateError(f"{self.id}: started in phase {self.phase.value}")
        self.phase = Phase.STREAMING
        return Started(self.id, self.stream, lane, format, sample_rate, pre_skip)

    def frame(self, payload: bytes, segment_end: bool = False, utterance_end: bool = False) -> bytes:
        """The next binary frame: header, then ``payload`` (never empty).
        ``utterance_end`` implies ``segment_end``."""
        self._check_audio()
        if not payload:
            raise StreamStateError(f"{self.id}: an empty audio frame")
        return self.frame_header(segment_end, utterance_end) + payload

    def frame_header(self, segment_end: bool = False, utterance_end: bool = False) -> bytes:
        """The next audio frame's header alone (the frame's flags and order
        advance as ``frame``'s do): for a carrier that sends the payload by
        itself, or the header and the payload as two pieces."""
        self._check_audio()
        flags = 0
        if segment_end or utterance_end:
            flags = FLAG_SEGMENT_END | (FLAG_UTTERANCE_END if utterance_end else 0)
            self._segment_closed = True
            if utterance_end:
                self.phase = Phase.CLOSING
        self._segment_open = True
        # The fields are in range by construction (ints counted here; the segment index
        # clamped), so the header is packed without FrameHeader's validation: once per frame.
        head = _pack_header(FRAME_VERSION, flags, min(self.segments, _U16), self.stream, self.seq)
        self.seq += 1
        return head

    def _check_audio(self) -> None:
        if self.phase is not Phase.STREAMING or self._segment_closed:
            raise StreamStateError(f"{self.id}: audio in phase {self.phase.value}"
                                   + (" after its segment's last frame" if self._segment_closed else ""))

    def words(self, words: Sequence[str], starts: Sequence[float], ends: Sequence[float],
              originals: Sequence[str | None], pending: tuple[WordStart, ...] = ()) -> TimedWords:
        """More words of the segment being spoken, before its last frame (columns)."""
        data = self.words_text(columns_body(words, starts, ends, originals, pending))
        return TimedWords.from_text(self.id, self.segments, data)

    def words_text(self, body: bytes) -> bytes:
        """``words`` as the server sends it per push: the message's JSON text,
        ``body`` its members after ``segment`` (``protocol.words.words_body``)."""
        if self.phase is not Phase.STREAMING or self._segment_closed:
            raise StreamStateError(f"{self.id}: words in phase {self.phase.value}"
                                   + (" after its segment's last frame" if self._segment_closed else ""))
        if self._words_prefix[0] != self.segments:  # made once per segment
            self._words_prefix = (self.segments, words_prefix(self.id, self.segments))
        return self._words_prefix[1] + body

    def flushed(self, flush_id: str) -> Flushed:
        """A flush acknowledgement: after ``started``, before the terminal."""
        if self.phase not in (Phase.STREAMING, Phase.CLOSING):
            raise StreamStateError(f"{self.id}: flushed in phase {self.phase.value}")
        return Flushed(self.id, flush_id)

    def segment(self, text: str, offset_ms: float, audio_ms: float,
                spoken: str | None = None) -> Segment:
        """The ``segment`` message after the current segment's last frame;
        ``spoken``: the text as the model read it."""
        if self.phase not in (Phase.STREAMING, Phase.CLOSING) or not self._segment_closed:
            raise StreamStateError(f"{self.id}: segment before its last frame")
        message = Segment(self.id, self.segments, text, offset_ms, audio_ms, spoken)
        self.segments += 1
        self._segment_open = self._segment_closed = False
        return message

    def done(self, audio_ms: float, timing: Timing, deadline_met: bool | None = None,
             unspoken: tuple[str, ...] = ()) -> Done:
        """``unspoken``: the input's sentences that normalized to nothing."""
        if self.phase not in (Phase.STREAMING, Phase.CLOSING) or self._segment_open:
            raise StreamStateError(f"{self.id}: done in phase {self.phase.value}"
                                   + (" inside a segment" if self._segment_open else ""))
        self.phase = Phase.ENDED
        return Done(self.id, audio_ms, self.segments, timing, deadline_met, tuple(unspoken))

    def cancelled(self) -> Cancelled:
        """After ``started`` (a cancel during admission waits for it)."""
        if self.phase is Phase.PENDING:
            raise StreamStateError(f"{self.id}: cancelled before started")
        self._end("cancelled")
        return Cancelled(self.id)

    def error(self, code: ErrorCode, message: str, field: str | None = None,
              retry_after_ms: int | None = None) -> Error:
        """A terminal error (also a refusal before ``started``)."""
        if code in NON_TERMINAL_CODES:
            raise StreamStateError(f"{self.id}: {code.value} never ends an utterance")
        self._end(code.value)
        return Error(self.id, code.value, message, field, retry_after_ms)

    def _end(self, what: str) -> None:
        # After the last frame an error may still come: a frame queued but not
        # yet written is dropped when its utterance fails (slow consumer).
        if self.phase is Phase.ENDED:
            raise StreamStateError(f"{self.id}: {what} after the utterance ended")
        self.phase = Phase.ENDED


# --- a client's side --------------------------------------------------------------------


class _Utterance:
    __slots__ = ("id", "phase", "stream", "next_seq", "segments", "last_flags", "words")

    def __init__(self, id: str) -> None:  # noqa: A002 - the wire name
        self.id = id
        self.phase = Phase.PENDING
        self.stream: int | None = None
        self.next_seq = 0
        self.segments = 0
        self.last_flags = 0  # flags of the last frame (0: none yet in this segment)
        self.words: WordOrder | None = None  # the open segment's words so far


class ClientConnection:
    """A client's view of one connection: what each server item means.

    Call ``opened(id)`` when sending a ``speak``; pass every text frame
    (str) and binary frame (bytes) the server sends to ``receive``. An
    utterance is forgotten after its terminal item; its id may be reused.
    """

    def __init__(self) -> None:
        self.hello: Hello | None = None
        self._by_id: dict[str, _Utterance] = {}
        self._by_stream: dict[int, _Utterance] = {}
        # Streams of recently ended utterances: their audio is a violation.
        self._ended_streams: dict[int, str] = {}

    def opened(self, id: str) -> None:  # noqa: A002 - the wire name
        """A ``speak`` with this id is being sent; raises ValueError if that
        id is still active here."""
        if id in self._by_id:
            raise ValueError(f"utterance {id!r} is still active")
        self._by_id[id] = _Utterance(id)

    def active(self, id: str) -> bool:  # noqa: A002 - the wire name
        return id in self._by_id

    def receive(self, frame: str | bytes | bytearray | memoryview) -> Received:
        """Classify one server frame. Raises ``StreamViolation`` when it
        breaks an ordering rule (the utterance is then forgotten) and
        ``ProtocolError`` for a text frame that does not decode (a type this
        version lacks comes back as ``UNKNOWN``)."""
        if isinstance(frame, str):
            return self._text(frame)
        return self._binary(frame)

    def _binary(self, frame: bytes | bytearray | memoryview) -> Received:
        try:
            header, payload = unpack_frame(frame)
        except ValueError as exc:
            raise StreamViolation(f"bad audio frame: {exc}") from None
        utt = self._by_stream.get(header.stream)
        if utt is None:
            ended = self._ended_streams.get(header.stream)
            if ended is not None:
                raise StreamViolation(f"utterance {ended}: audio after its terminal message", ended)
            raise StreamViolation(f"audio of unknown stream {header.stream}")
        if utt.phase is not Phase.STREAMING:
            self._fail(utt, f"audio in phase {utt.phase.value}")
        if header.seq != utt.next_seq:
            self._fail(utt, f"frame seq {header.seq}, expected {utt.next_seq}")
        if header.segment != min(utt.segments, _U16):
            self._fail(utt, f"audio of segment {header.segment} while segment {utt.segments} is open")
        if utt.last_flags & FLAG_SEGMENT_END:
            self._fail(utt, "audio after its segment's last frame")
        utt.next_seq += 1
        utt.last_flags = header.flags | 0x100  # never 0 once a frame came
        if header.utterance_end:
            utt.phase = Phase.CLOSING
        return Received(Kind.AUDIO, utt.id, Audio(header, payload))

    def _text(self, frame: str) -> Received:
        try:
            message = decode_server(frame)
        except ProtocolError as exc:
            if exc.code is ErrorCode.UNKNOWN_TYPE:
                return Received(Kind.UNKNOWN, exc.id, None)
            raise
        if isinstance(message, Hello):
            if self.hello is not None:
                raise StreamViolation("a second hello")
            self.hello = message
            return Received(Kind.HELLO, None, message)
        if isinstance(message, Error) and message.id is None:
            return Received(Kind.CONNECTION_ERROR, None, message)
        if isinstance(message, Pong):
            return Received(Kind.PONG, None, message)
        utt = self._by_id.get(message.id) if message.id is not None else None
        if isinstance(message, Error) and not ends_utterance(message):
            # Also for an id with no open utterance: an unknown_id answers a
            # message naming none (a cancel that raced the end, say).
            return Received(Kind.NOTICE, message.id, message)
        if utt is None:
            return Received(Kind.UNKNOWN, message.id, message)
        if isinstance(message, Started):
            return self._started(utt, message)
        if isinstance(message, Segment):
            return self._segment(utt, message)
        if isinstance(message, Words):
            return self._words(utt, message)
        if isinstance(message, Flushed):
            if utt.phase is Phase.PENDING:
                self._fail(utt, "flushed before started")
            return Received(Kind.FLUSHED, utt.id, message)
        if isinstance(message, Done):
            self._done(utt, message)
        self._forget(utt)
        return Received(Kind.END, utt.id, message)

    def _started(self, utt: _Utterance, message: Started) -> Received:
        if utt.phase is not Phase.PENDING:
            self._fail(utt, "a second started")
        if message.stream in self._by_stream:
            self._fail(utt, f"stream {message.stream} is in use")
        utt.phase, utt.stream = Phase.STREAMING, message.stream
        self._by_stream[message.stream] = utt
        return Received(Kind.STARTED, utt.id, message)

    def _segment(self, utt: _Utterance, message: Segment) -> Received:
        if not utt.last_flags & FLAG_SEGMENT_END:
            self._fail(utt, "segment before its last frame")
        if message.index != utt.segments:
            self._fail(utt, f"segment {message.index}, expected {utt.segments}")
        if utt.words is not None:
            broken = utt.words.closed(message.offset_ms, message.audio_ms)
            if broken is not None:
                self._fail(utt, f"segment {message.index}: {broken}")
        utt.segments += 1
        utt.last_flags = 0
        utt.words = None
        return Received(Kind.SEGMENT, utt.id, message)

    def _words(self, utt: _Utterance, message: Words) -> Received:
        if utt.phase is not Phase.STREAMING or utt.last_flags & FLAG_SEGMENT_END:
            self._fail(utt, "words after their segment's last frame")
        if message.segment != utt.segments:
            self._fail(utt, f"words of segment {message.segment} while {utt.segments} is open")
        if utt.words is None:
            utt.words = WordOrder(_MS_SLACK)
        broken = utt.words.add(message)
        if broken is not None:
            self._fail(utt, broken)
        return Received(Kind.WORDS, utt.id, message)

    def _done(self, utt: _Utterance, message: Done) -> None:
        if utt.phase is Phase.PENDING:
            self._fail(utt, "done before started")
        if utt.last_flags:
            self._fail(utt, "done before the last segment's segment message")
        if message.segments != utt.segments:
            self._fail(utt, f"done counts {message.segments} segments, {utt.segments} came")

    def _forget(self, utt: _Utterance) -> None:
        self._by_id.pop(utt.id, None)
        if utt.stream is not None:
            self._by_stream.pop(utt.stream, None)
            if len(self._ended_streams) >= 4096:  # bounded: only recent ends matter
                self._ended_streams.clear()
            self._ended_streams[utt.stream] = utt.id
        utt.phase = Phase.ENDED

    def _fail(self, utt: _Utterance, why: str) -> None:
        self._forget(utt)
        raise StreamViolation(f"utterance {utt.id}: {why}", utt.id)
