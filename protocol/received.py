"""What a client's ``protocol.stream.ClientConnection`` makes of each item the
server sends: a ``Received``, its ``Kind`` and, for audio, the ``Audio``."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from protocol.frames import FrameHeader
from protocol.messages import ServerMessage


class Kind(enum.Enum):
    """What a received item means for its utterance."""

    HELLO = "hello"
    STARTED = "started"
    AUDIO = "audio"
    SEGMENT = "segment"
    WORDS = "words"  # word timings of the segment being spoken
    FLUSHED = "flushed"  # a flush acknowledgement
    PONG = "pong"  # the answer to a ping (no utterance)
    NOTICE = "notice"  # a non-terminal error: one message was refused
    END = "end"  # done, cancelled or a terminal error
    CONNECTION_ERROR = "connection_error"  # an error with id null
    UNKNOWN = "unknown"  # names no utterance this client opened (or a message type it lacks)


@dataclass(frozen=True, slots=True)
class Audio:
    header: FrameHeader
    payload: memoryview


@dataclass(frozen=True, slots=True)
class Received:
    """One item from the server: ``message`` is a server message or ``Audio``,
    ``id`` its utterance (None for hello and connection errors)."""

    kind: Kind
    id: str | None
    message: ServerMessage | Audio | None
