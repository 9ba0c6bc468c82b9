"""What an utterance says to whatever carries it (a WebSocket session, an
OpenAI speech request): ``UtteranceMessage``, the wire messages it sends,
``done_timing``, the timing its ``done`` reports, and ``Outcome``, how it
ended, for accounting. The carrier's interface, ``UtteranceLink``, is in
realtime.utterance.
"""

from __future__ import annotations

import enum

from protocol.messages import Cancelled, Done, Error, Segment, Started, Timing
from protocol.words import Flushed, Words

UtteranceMessage = Started | Segment | Done | Cancelled | Error | Words | Flushed


class Outcome(enum.Enum):
    """How an utterance ended, for accounting (the wire says it with its terminal)."""

    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"  # an error message; the code says why
    DISCONNECTED = "disconnected"  # the connection went away first


def done_timing(received: float, first_job_at: float | None, first_audio_at: float | None,
                now: float, audio_ms: float) -> Timing:
    """``done.timing`` from monotonic times: the speak's receipt, its first
    model step and first frame (None when none came), and now."""
    total_ms = (now - received) * 1000.0
    queued_ms = (first_job_at - received) * 1000.0 if first_job_at is not None else total_ms
    first_audio_ms = (first_audio_at - received) * 1000.0 if first_audio_at is not None else None
    return Timing(
        queued_ms=round(max(queued_ms, 0.0), 3),
        first_audio_ms=None if first_audio_ms is None else round(first_audio_ms, 3),
        total_ms=total_ms,
        rtf=total_ms / audio_ms if audio_ms > 0 else None,
    )
