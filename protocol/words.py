"""Word timings, flush acknowledgements and keepalive: the voice-agent
additions to protocol v1 (all backward compatible).

``Words`` (server -> client, only for a ``speak`` with ``timestamps: true``)
tells when each spoken word of a segment plays, on the clock of
``segment.offset_ms`` (ms from the utterance's first audio sample). Words are
the text as spoken (after normalization); ``WordTiming.original`` names the
client's text a word came from when it differs ("$20" -> "twenty" and
"dollars", each with original "$20"). The ``words`` messages of one segment
add words in order and never revise one; all of them come before that
segment's last audio frame (docs/protocol.md, "Word timings"). With token
chunking a message may also carry ``pending``: the words after those that
have begun in the audio about to be sent but whose end is not known yet
(``WordStart``: word and start only); each comes again in a later message's
``words`` with the same start. ``WordOrder`` is a client's check of these
rules for one open segment.

``Flushed`` answers a ``flush`` that carried a ``flush_id``, once all audio
of the text flushed so far has been sent.

``Ping`` (client -> server) is answered by ``Pong`` with the same ``data``;
it is a connection-level message (no utterance id) and, like every client
message, keeps an idle connection open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any, ClassVar, NamedTuple

import orjson

# "estimated": the segment's exact audio span divided over its words by a
# weight per word; "aligned": derived from the model (unused so far).
WORD_METHODS: tuple[str, ...] = ("estimated", "aligned")
PING_DATA_MAX_CHARS = 256


def _with_data(kind: str, data: str | None) -> dict[str, Any]:
    return {"type": kind} if data is None else {"type": kind, "data": data}


class WordTiming(NamedTuple):  # a tuple: many per message, built on the server's hot path
    """One spoken word: ``start_ms <= end_ms``, both in the utterance's audio."""

    word: str
    start_ms: float
    end_ms: float
    original: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"word": self.word, "start_ms": self.start_ms,
                                "end_ms": self.end_ms}
        if self.original is not None:
            wire["original"] = self.original
        return wire


class WordStart(NamedTuple):
    """A word that has begun, its end not known yet (``Words.pending``)."""

    word: str
    start_ms: float
    original: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"word": self.word, "start_ms": self.start_ms}
        if self.original is not None:
            wire["original"] = self.original
        return wire


@dataclass(frozen=True, slots=True)
class Words:
    """More words of segment ``segment`` (the index of its ``segment`` message);
    ``pending``: the words after them that have begun, in order (replacing
    the previous message's ``pending`` of the segment; empty: none)."""

    TYPE: ClassVar[str] = "words"

    id: str
    segment: int
    words: tuple[WordTiming, ...]
    method: str = "estimated"
    pending: tuple[WordStart, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        words = [{"word": w, "start_ms": a, "end_ms": b} if o is None else
                 {"word": w, "start_ms": a, "end_ms": b, "original": o}
                 for w, a, b, o in self.words]  # per word: no method call
        wire = {"type": self.TYPE, "id": self.id, "segment": self.segment, "words": words,
                "method": self.method}
        if self.pending:
            wire["pending"] = [p.to_wire() for p in self.pending]
        return wire


class TimedWords:
    """A ``words`` message as the server builds it: its JSON text, made once
    (``to_wire`` hands it to the encoder as an ``orjson.Fragment``), the same
    bytes as ``Words`` (``decode_server`` reads it back as one). From
    columns (``words[i]`` from ``starts[i]`` to ``ends[i]``; ``originals[i]``
    None where the word is the client's own), or, on the server's per-push
    path, ``from_body`` with what ``WordsJson`` and ``words_body`` made."""

    TYPE: ClassVar[str] = "words"
    __slots__ = ("id", "segment", "data")

    def __init__(self, id: str, segment: int, words: Sequence[str],  # noqa: A002 - the wire name
                 starts: Sequence[float], ends: Sequence[float],
                 originals: Sequence[str | None], pending: tuple[WordStart, ...] = (),
                 method: str = "estimated") -> None:
        self.id, self.segment = id, segment
        self.data = words_prefix(id, segment) + columns_body(words, starts, ends, originals, pending, method)

    @classmethod
    def from_body(cls, id: str, segment: int, body: bytes) -> TimedWords:  # noqa: A002
        """The message of segment ``segment`` whose members after ``segment`` are ``body``."""
        return cls.from_text(id, segment, words_prefix(id, segment) + body)

    @classmethod
    def from_text(cls, id: str, segment: int, data: bytes) -> TimedWords:  # noqa: A002
        """The message of segment ``segment`` whose JSON text is ``data``."""
        message = cls.__new__(cls)
        message.id, message.segment, message.data = id, segment, data
        return message

    def to_wire(self) -> orjson.Fragment:
        return orjson.Fragment(self.data)


# The JSON of words, for the server's hot path (a message per push of audio):
# a word's members but its times are bytes made once per distinct word
# (``_head``: up to its start, ``_tail``: after its end), its times come from
# one ``orjson.dumps`` per list, so the bytes are orjson's own (escapes,
# floats) and no dict is made per word. Bounded memos: clients choose the words.
_HEADS: dict[str, bytes] = {}
_TAILS: dict[str | None, bytes] = {None: b"}"}
_MEMO_MAX = 1 << 16
_END_MS = b',"end_ms":'
_METHODS = {m: b'],"method":' + orjson.dumps(m) for m in WORD_METHODS}
_OPEN, _PENDING, _PENDING_CLOSE = b'"words":[', b',"pending":[', b"]}"  # words_body's layout


def _head(word: str) -> bytes:
    head = _HEADS.get(word)
    if head is None:
        if len(_HEADS) >= _MEMO_MAX:
            _HEADS.clear()
        head = _HEADS[word] = b'{"word":' + orjson.dumps(word) + b',"start_ms":'
    return head


def _tail(original: str | None) -> bytes:
    tail = _TAILS.get(original)
    if tail is None:
        if len(_TAILS) >= _MEMO_MAX:
            _TAILS.clear()
            _TAILS[None] = b"}"
        tail = _TAILS[original] = b',"original":' + orjson.dumps(original) + b"}"
    return tail


def numbers(values: Sequence[float]) -> list[bytes]:
    """orjson's text of each number (a number's text holds no comma)."""
    return orjson.dumps(values)[1:-1].split(b",")


def words_prefix(id: str, segment: int) -> bytes:  # noqa: A002 - the wire name
    """A ``words`` message's members up to ``segment``: with a ``words_body``, its JSON text."""
    return b'{"type":"words","id":%b,"segment":%d,' % (orjson.dumps(id), segment)


class WordsJson:
    """The words of one segment (``words``, ``originals`` as in
    ``TimedWords``) ready to be written: ``timed`` gives the JSON objects of
    some of them at given times, ``started`` a pending word's."""

    __slots__ = ("heads", "tails")

    def __init__(self, words: Sequence[str], originals: Sequence[str | None]) -> None:
        try:  # every word seen before: one C call, no Python step per word
            heads = itemgetter(*words)(_HEADS) if len(words) > 1 else [_HEADS[w] for w in words]
        except KeyError:
            heads = [_HEADS.get(w) or _head(w) for w in words]
        self.heads: Sequence[bytes] = heads
        tails = _TAILS.get
        # most words are the client's own (no original): one list then
        self.tails = ([b"}"] * len(words) if originals.count(None) == len(originals)
                      else [tails(o) or _tail(o) for o in originals])

    def timed(self, lo: int, starts: Sequence[float], ends: Sequence[float]) -> list[bytes]:
        """``{"word", "start_ms", "end_ms", "original"?}`` of words ``lo``,
        ``lo + 1``, ... (as many as ``starts``), from ``starts[i]`` to ``ends[i]``."""
        texts = numbers([*starts, *ends])  # one pass for both columns
        return self.objects(lo, texts, texts[len(starts):])

    def objects(self, lo: int, start_texts: Sequence[bytes], end_texts: Sequence[bytes]) -> list[bytes]:
        """``timed`` of as many words as ``end_texts`` with their times'
        texts (from ``numbers``) given; ``start_texts`` may run longer."""
        hi = lo + len(end_texts)
        return list(map(b"".join, zip(self.heads[lo:hi], start_texts, repeat(_END_MS), end_texts,
                                      self.tails[lo:hi])))

    def started(self, i: int, start_text: bytes) -> bytes:
        """``{"word", "start_ms", "original"?}`` (a pending word) of word
        ``i``, ``start_text`` its start (from ``numbers``)."""
        return self.heads[i] + start_text + self.tails[i]

    def body(self, objects: list[bytes], i: int, start_text: bytes, method: str = "estimated") -> bytes:
        """``words_body(objects, self.started(i, start_text), method)`` in one join."""
        return b"".join((_OPEN, b",".join(objects), _METHODS[method], _PENDING,
                         self.heads[i], start_text, self.tails[i], _PENDING_CLOSE))


def words_body(objects: list[bytes], pending: bytes = b"", method: str = "estimated") -> bytes:
    """A ``words`` message's members after ``segment``: ``objects`` (from
    ``WordsJson.timed``) the words, ``pending`` the ``started`` objects,
    comma-separated (empty: no ``pending`` member)."""
    if pending:
        return b"".join((_OPEN, b",".join(objects), _METHODS[method], _PENDING, pending, _PENDING_CLOSE))
    return b"".join((_OPEN, b",".join(objects), _METHODS[method], b"}"))


def columns_body(words: Sequence[str], starts: Sequence[float], ends: Sequence[float],
                 originals: Sequence[str | None], pending: tuple[WordStart, ...] = (),
                 method: str = "estimated") -> bytes:
    """``words_body`` of words in columns (as ``TimedWords`` takes them)."""
    started = WordsJson([p.word for p in pending], [p.original for p in pending])
    texts = numbers([p.start_ms for p in pending])
    return words_body(WordsJson(words, originals).timed(0, starts, ends),
                      b",".join([started.started(i, text) for i, text in enumerate(texts[:len(pending)])]),
                      method)


class WordOrder:
    """A client's check of one open segment's ``words`` messages: words in
    order and monotonic, a pending word committed with the start it was
    announced with, nothing pending at the segment's end. ``add`` and
    ``closed`` return what broke a rule, or None. ``span``: (first start,
    last end) of the words so far. ``slack_ms``: the wire's rounding."""

    __slots__ = ("span", "pending", "slack_ms")

    def __init__(self, slack_ms: float) -> None:
        self.span: tuple[float, float] | None = None
        self.pending: tuple[WordStart, ...] = ()
        self.slack_ms = slack_ms

    def add(self, message: Words) -> str | None:
        slack = self.slack_ms
        last = self.span[1] if self.span is not None else 0.0
        for word in message.words:
            if word.start_ms < last - slack:
                return f"word {word.word!r} starts before the previous one ends"
            last = word.end_ms
        again: list[WordTiming | WordStart] = [*message.words, *message.pending]
        for early, now in zip(self.pending, again):
            if early.word != now.word or abs(early.start_ms - now.start_ms) > slack:
                return f"pending word {early.word!r} came again as {now.word!r} at {now.start_ms}"
        if len(message.words) + len(message.pending) < len(self.pending):
            return f"pending word {self.pending[-1].word!r} vanished"
        ahead = last
        for started in message.pending:
            if started.start_ms < ahead - slack:
                return f"pending word {started.word!r} starts before the previous one ends"
            ahead = started.start_ms
        self.pending = message.pending
        if message.words:
            first = self.span[0] if self.span is not None else message.words[0].start_ms
            self.span = (first, last)
        return None

    def closed(self, offset_ms: float, audio_ms: float) -> str | None:
        """The segment's ``segment`` message came: its words must lie inside it."""
        if self.pending:
            return f"pending word {self.pending[0].word!r} never came"
        span, slack = self.span, self.slack_ms
        if span is not None and (span[0] < offset_ms - slack
                                 or span[1] > offset_ms + audio_ms + slack):
            return f"words {span} outside the segment"
        return None


@dataclass(frozen=True, slots=True)
class Flushed:
    """All audio of the text flushed up to the ``flush`` with this
    ``flush_id`` has been sent."""

    TYPE: ClassVar[str] = "flushed"

    id: str
    flush_id: str

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.TYPE, "id": self.id, "flush_id": self.flush_id}


@dataclass(frozen=True, slots=True)
class Ping:
    """Keepalive: the server answers ``Pong`` with the same ``data``."""

    TYPE: ClassVar[str] = "ping"

    data: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_data(self.TYPE, self.data)


@dataclass(frozen=True, slots=True)
class Pong:
    TYPE: ClassVar[str] = "pong"

    data: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_data(self.TYPE, self.data)
