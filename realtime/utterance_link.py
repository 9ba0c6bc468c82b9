"""What an utterance says to whatever carries it (a WebSocket session, an
OpenAI speech request): ``UtteranceMessage``, the wire messages it sends, and
``Outcome``, how it ended, for accounting. The carrier's interface,
``UtteranceLink``, is in realtime.utterance.
"""

from __future__ import annotations

import enum

from protocol.messages import Cancelled, Done, Error, Segment, Started
from protocol.words import Flushed, Words

UtteranceMessage = Started | Segment | Done | Cancelled | Error | Words | Flushed


class Outcome(enum.Enum):
    """How an utterance ended, for accounting (the wire says it with its terminal)."""

    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"  # an error message; the code says why
    DISCONNECTED = "disconnected"  # the connection went away first
