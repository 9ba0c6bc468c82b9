"""Word timings, flush acknowledgements and keepalive: the voice-agent
additions to protocol v1 (all backward compatible).

``Words`` (server -> client, only for a ``speak`` with ``timestamps: true``)
tells when each spoken word of a segment plays, on the clock of
``segment.offset_ms`` (ms from the utterance's first audio sample). Words are
the text as spoken (after normalization); ``WordTiming.original`` names the
client's text a word came from when it differs ("$20" -> "twenty" and
"dollars", each with original "$20"). The ``words`` messages of one segment
add words in order and never revise one; all of them come before that
segment's last audio frame (docs/protocol.md, "Word timings").

``Flushed`` answers a ``flush`` that carried a ``flush_id``, once all audio
of the text flushed so far has been sent.

``Ping`` (client -> server) is answered by ``Pong`` with the same ``data``;
it is a connection-level message (no utterance id) and, like every client
message, keeps an idle connection open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

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


@dataclass(frozen=True, slots=True)
class Words:
    """More words of segment ``segment`` (the index of its ``segment`` message)."""

    TYPE: ClassVar[str] = "words"

    id: str
    segment: int
    words: tuple[WordTiming, ...]
    method: str = "estimated"

    def to_wire(self) -> dict[str, Any]:
        words = [{"word": w, "start_ms": a, "end_ms": b} if o is None else
                 {"word": w, "start_ms": a, "end_ms": b, "original": o}
                 for w, a, b, o in self.words]  # per word: no method call
        return {"type": self.TYPE, "id": self.id, "segment": self.segment, "words": words,
                "method": self.method}


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
