"""What the event loop and the model thread hand each other.

Sessions hand the worker a ``Submission`` (the new segments of one
utterance) or cancel job ids; the worker hands back ``WorkerUpdate``s, each
addressed to the utterance (its ``UpdateSink``) that a job belongs to, through
an ``UpdateChannel``. The messages are plain values, never mutated after
hand-off.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from protocol import ErrorCode
from realtime.engine.api import SegmentRequest
from scheduler import Lane

if TYPE_CHECKING:
    from scheduler.plan import Samples

log = logging.getLogger(__name__)


class UpdateKind(enum.Enum):
    ADMITTED = "admitted"  # the utterance's first submission was accepted
    REFUSED = "refused"  # a submission was refused (code: overloaded, unsupported, ...)
    EMPTY = "empty"  # the segment normalized to nothing: done, no audio
    STARTED = "started"  # the job got its first model step
    REFINED = "refined"  # the job's refine pass ended: ``message`` is the text it reads
    AUDIO = "audio"  # samples for the job (float32, 24 kHz)
    FINISHED = "finished"  # the job produced all its audio
    FAILED = "failed"  # the job failed (code: internal)


class UpdateSink(Hashable, Protocol):
    """An utterance as the worker sees it (also the scheduler's key for it).
    Called on the event loop only."""

    def on_worker_update(self, update: WorkerUpdate) -> None: ...


class ModelSide(Protocol):
    """What an utterance asks of the model side: ``ModelWorker`` itself
    (tests give a fake). Called on the event loop only."""

    def submit(self, submission: Submission) -> None: ...
    def cancel(self, job_ids: tuple[int, ...], sink: UpdateSink | None = None) -> None:
        """Stop these jobs; with ``sink``, its utterance ended (the capacity it held goes)."""
    def new_job_id(self) -> int: ...


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
    last: bool = False  # AUDIO: the job's last audio (its FINISHED follows)


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


@dataclass(frozen=True, slots=True)
class CancelJobs:
    job_ids: tuple[int, ...]
    sink: UpdateSink | None = None  # its utterance ended: free the place it held


def refused(sub: Submission, code: ErrorCode, message: str, field_name: str | None = None,
            retry_after_ms: int | None = None) -> WorkerUpdate:
    """The update that refuses every segment of ``sub``."""
    return WorkerUpdate(sub.sink, UpdateKind.REFUSED, code=code.value, message=message,
                        at=time.monotonic(), field=field_name, retry_after_ms=retry_after_ms)


@dataclass(frozen=True)
class LaneLoad:
    """The interactive lane's saturation as the observer last published it
    (``realtime.server.work.observe``; ``GET /load`` serves it, ``realtime.server.load``):
    live streams over the capacity (1.0 and above: new interactive work is
    refused), the retry hint while saturated, the first-audio budget."""

    streams: int = 0
    capacity: int = 0
    saturation: float = 0.0
    retry_after_ms: int | None = None
    first_audio_budget_ms: float | None = None


@dataclass
class WorkerStats:
    """A snapshot for tests and metrics; read from any thread."""

    in_flight: int = 0
    active_slots: int = 0
    restarts: int = 0
    steps: int = 0
    queue: dict[str, int] = field(default_factory=dict)
    # Replaced whole, never mutated, so the event loop reads it safely.
    load: LaneLoad = field(default_factory=LaneLoad)


class UpdateChannel:
    """Hands ``WorkerUpdate``s from the model thread to the event loop, in order.

    ``publish`` (model thread) schedules one delivery on the loop; while the
    loop has not yet run the previous one, new updates join it, so a model
    that steps faster than the loop delivers costs the loop one callback per
    catch-up, not one per step. ``note_delay`` hears how long each batch
    waited for the loop.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop,
                 note_delay: Callable[[float], None] | None = None) -> None:
        self._loop = loop
        self._note_delay = note_delay
        self._pending: list[WorkerUpdate] = []
        self._lock = threading.Lock()
        self._since = 0.0  # when the oldest undelivered update was published

    def publish(self, updates: list[WorkerUpdate]) -> None:
        """Model thread: queue ``updates`` after the earlier ones."""
        if not updates:
            return
        with self._lock:
            if self._pending:
                self._pending.extend(updates)
                return
            self._pending = updates
            self._since = time.monotonic()
        try:
            self._loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the event loop is closed: the server is gone
            with self._lock:
                self._pending = []
            log.debug("event loop closed; dropping %d updates", len(updates))

    def _deliver(self) -> None:
        """Event loop: route everything published since the last call."""
        with self._lock:
            updates, self._pending = self._pending, []
            since = self._since
        for update in updates:
            try:
                update.sink.on_worker_update(update)
            except Exception:  # one broken utterance must not starve the rest
                log.exception("delivering a %s update failed", update.kind)
        if self._note_delay is not None:
            self._note_delay(time.monotonic() - since)
