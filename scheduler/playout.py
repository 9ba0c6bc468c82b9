"""Interactive deadlines from playback: when must a segment's audio begin?

An interactive utterance plays its segments back to back. Segment 0 must
start sounding by its first-audio deadline; segment k must start sounding
when segment k-1's audio would end, so the listener hears no gap. A segment
that is already running must produce its next code before the audio it has
produced so far runs out. Audio lengths come from codes: 46.875 per second.
The runner, which sees the audio go out, plays a segment after the one it
``follows``: while the listener holds enough of it, a new segment's audio may
be rendered in larger, cheaper pieces.

Thread: pure functions, model thread.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from scheduler.jobs import CODES_PER_SECOND, Job, JobState
from scheduler.plan import JobId, Lane


@dataclass
class ScheduledUtterance:
    """Every segment the scheduler has seen for one utterance, by index."""

    key: Hashable
    lane: Lane
    seq: int  # admission order, breaks deadline ties first come first served
    arrival: float
    segments: dict[int, Job] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return all(j.state.terminal for j in self.segments.values())


@dataclass(frozen=True)
class Playback:
    """For one segment: when its first audio is due, when it starts sounding
    (estimated), and when its audio so far runs out."""

    first_audio_due: float
    starts: float
    runs_dry: float
    ends: float


NO_END = float("-inf")  # where the audio "before" segment 0 ends


def segment_times(job: Job, prev_end: float, first_audio_s: float) -> tuple[float, float, float]:
    """``(due, starts, ends)`` of one segment, given where the audio of the
    segment before it ends (``NO_END`` for the first one)."""
    if prev_end == NO_END:
        due = job.deadline if job.deadline is not None else job.arrival + first_audio_s
    else:
        # A segment that arrives after the one before it went quiet (text
        # streamed slowly) is due as soon as a fresh segment 0 would be.
        due = max(prev_end, job.arrival + first_audio_s)
    sounding = job.first_code_at if job.first_code_at is not None else due
    starts = max(prev_end, sounding)
    codes = job.tokens if job.state.terminal else job.expected_tokens
    return due, starts, starts + codes / CODES_PER_SECOND


def playback(utterance: ScheduledUtterance, index: int, first_audio_s: float) -> Playback:
    """Walk the segments up to ``index`` and estimate their playback.

    A segment not started yet is assumed to start sounding at its due time; a
    running one at its first code; one not finished plays for its expected
    length. Cancelled segments play nothing.
    """
    end = NO_END
    result = None
    for k in sorted(i for i in utterance.segments if i <= index):
        job = utterance.segments[k]
        if job.state is JobState.CANCELLED and k != index:
            continue
        due, starts, end = segment_times(job, end, first_audio_s)
        result = Playback(due, starts, starts + job.tokens / CODES_PER_SECOND, end)
    if result is None:
        raise KeyError(index)
    return result



def follows(utterance: ScheduledUtterance | None, index: int) -> JobId | None:
    """The job whose audio segment ``index``'s plays after: the nearest
    earlier segment not cancelled (None for the first one)."""
    if utterance is None:
        return None
    for k in sorted((k for k in utterance.segments if k < index), reverse=True):
        job = utterance.segments[k]
        if job.state is not JobState.CANCELLED:
            return job.id
    return None
