"""What the event loop and the model thread hand each other.

Sessions hand the worker a ``Submission`` (the new segments of one
utterance) or cancel job ids; the worker hands back ``WorkerUpdate``s, each
addressed to the utterance (its ``UpdateSink``) that a job belongs to. These
are plain values: nothing here runs code on the other side's thread.

Thread: built on one side, read on the other; never mutated after hand-off.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from realtime.runtime.api import SegmentRequest
from scheduler import Lane

if TYPE_CHECKING:
    from scheduler.plan import Samples


class UpdateKind(enum.Enum):
    ADMITTED = "admitted"  # the utterance's first submission was accepted
    REFUSED = "refused"  # a submission was refused (code: overloaded, unsupported, ...)
    EMPTY = "empty"  # the segment normalized to nothing: done, no audio
    STARTED = "started"  # the job got its first model step
    AUDIO = "audio"  # samples for the job (float32, 24 kHz)
    FINISHED = "finished"  # the job produced all its audio
    FAILED = "failed"  # the job failed (code: internal)


class UpdateSink(Protocol):
    """An utterance as the worker sees it. Called on the event loop only."""

    def on_worker_update(self, update: WorkerUpdate) -> None: ...


@dataclass(slots=True)
class WorkerUpdate:
    """One thing that happened to a job, for its utterance. Read-only once
    built (not frozen: a frozen dataclass costs a setattr call per field, and
    a busy step builds several of these). ``code`` is a wire error code for
    REFUSED and FAILED; ``field`` the offending request field, if any;
    ``retry_after_ms`` the retry hint of a refusal caused by load."""

    sink: UpdateSink
    kind: UpdateKind
    job_id: int | None = None
    audio: Samples | None = None
    code: str | None = None
    message: str = ""
    at: float = 0.0  # time.monotonic() on the model thread
    field: str | None = None
    retry_after_ms: int | None = None


@dataclass(frozen=True, slots=True)
class SegmentWork:
    """One segment of an utterance, as a session submits it."""

    job_id: int
    index: int
    request: SegmentRequest
    est_tokens: int


@dataclass(frozen=True, slots=True)
class Submission:
    """New segments of one utterance. The first submission of an utterance
    is answered with ADMITTED or REFUSED; a later one only with REFUSED
    when refused. ``deadline`` is absolute (monotonic seconds) or None."""

    sink: UpdateSink
    lane: Lane
    arrival: float
    deadline: float | None
    segments: tuple[SegmentWork, ...]
    first: bool


@dataclass
class WorkerStats:
    """A snapshot for tests and metrics; read from any thread."""

    in_flight: int = 0
    active_slots: int = 0
    restarts: int = 0
    steps: int = 0
    queue: dict[str, int] = field(default_factory=dict)
    # The interactive lane's saturation (realtime.overload.load_report):
    # streams, capacity, saturation, retry_after_ms, first_audio_budget_ms.
    # Replaced whole, never mutated, so the event loop reads it safely.
    load: dict[str, Any] = field(default_factory=dict)
