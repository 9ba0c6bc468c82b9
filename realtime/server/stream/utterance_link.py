"""What an utterance says to whatever carries it (a WebSocket session, an
OpenAI speech request): ``UtteranceMessage``, the wire messages it sends,
``UtteranceClock``, its times (the timing its ``done`` reports, the deadline
it is submitted with, the metrics' first audio), and ``Outcome``, how it
ended, for accounting. The carrier's interface, ``Transport``, is in
realtime.server.stream.utterance; the model side's, ``ModelSide``, in realtime.server.work.handoff.
"""

from __future__ import annotations

import enum
import time

from protocol.messages import Cancelled, Done, Error, Segment, Started, Timing
from protocol.words import Flushed, TimedWords, Words

UtteranceMessage = Started | Segment | Done | Cancelled | Error | Words | TimedWords | Flushed


class Outcome(enum.Enum):
    """How an utterance ended, for accounting (the wire says it with its terminal)."""

    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"  # an error message; the code says why
    DISCONNECTED = "disconnected"  # the connection went away first


class UtteranceClock:
    """An utterance's times, monotonic: ``received`` (the speak's receipt),
    its first model step and first frame, and, on the background lane,
    ``deadline_ms`` and whether ``done`` met it (``deadline_met``)."""

    def __init__(self, received: float, deadline_ms: int | None) -> None:
        self.received = received
        self.deadline_ms = deadline_ms
        self.first_job_at: float | None = None
        self.first_audio_at: float | None = None
        self.deadline_met: bool | None = None  # background: set by done

    @property
    def deadline(self) -> float | None:
        """The deadline as a monotonic time (None on the interactive lane)."""
        return None if self.deadline_ms is None else self.received + self.deadline_ms / 1000.0

    def job_started(self, at: float) -> None:
        if self.first_job_at is None:
            self.first_job_at = at

    def frame_sent(self) -> None:
        if self.first_audio_at is None:
            self.first_audio_at = time.monotonic()

    def done(self, audio_ms: float) -> Timing:
        """``done.timing`` now (and ``deadline_met``)."""
        timing = done_timing(self.received, self.first_job_at, self.first_audio_at,
                             time.monotonic(), audio_ms)
        if self.deadline_ms is not None:
            self.deadline_met = timing.total_ms <= self.deadline_ms
        return timing

    @property
    def first_audio_seconds(self) -> float | None:
        return None if self.first_audio_at is None else self.first_audio_at - self.received


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
