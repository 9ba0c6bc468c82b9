"""Which live jobs may run now, and in what order the interactive ones rank.

Both answers come from one walk over each utterance's segments in index
order, so a step costs O(live segments) instead of re-walking the earlier
segments once per job:

- a waiting segment may start only when every earlier one has started (or
  ended): along the walk, the first segment that has neither blocks the rest;
- an interactive segment's rank needs its playback (``scheduler.playout``),
  which the same walk accumulates with ``playout.segment_times``, so the values
  equal ``playback(utt, k, ...)`` for every segment ``k`` visited.

Thread: pure functions, model thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from scheduler.jobs import CODES_PER_SECOND, Job, JobState
from scheduler.playout import NO_END, ScheduledUtterance, segment_times

_ACTIVE = JobState.ACTIVE
_CANCELLED = JobState.CANCELLED


def runnable(utterance: ScheduledUtterance) -> Iterator[Job]:
    """The utterance's live jobs that may be in the next step: every running
    one, and a waiting one only when all earlier segments have started."""
    segments = utterance.segments
    blocked = False
    for k in sorted(segments):
        job = segments[k]
        state = job.state
        if state.terminal:
            continue
        if state is _ACTIVE or not blocked:
            yield job
        if job.started_at is None:
            blocked = True


def ranked_interactive(utterances: Iterable[ScheduledUtterance], first_audio_s: float,
                       lead_s: float) -> list[Job]:
    """The runnable jobs of interactive ``utterances``, most urgent first.

    A running job ranks at the time its audio so far runs dry, or, when it
    got its newest code after that (it is behind: the model cannot keep up),
    at that code's time, so streams that are behind take turns instead of
    the earliest started catching up first. A waiting one ranks at its
    first-audio due time less ``lead_s``, but never before its own arrival:
    a new segment goes before streams that run dry after it came, never
    before a stream that was already starved then. No stream, new or
    running, is held back without bound. Ties go by admission order,
    segment index, job id (so the order never depends on the input's).
    """
    ranked: list[tuple[float, int, int, int, Job]] = []
    for utt in utterances:
        segments = utt.segments
        end = NO_END
        blocked = False
        for k in sorted(segments):
            job = segments[k]
            state = job.state
            if state is _CANCELLED:
                continue  # plays nothing, and an ended segment blocks nothing
            due, starts, end = segment_times(job, end, first_audio_s)
            terminal = state.terminal
            if not terminal:
                if state is _ACTIVE:
                    dry = starts + job.tokens / CODES_PER_SECOND
                    last = job.last_code_at
                    ranked.append((dry if last is None or dry > last else last,
                                   utt.seq, k, job.id, job))
                elif not blocked:
                    ranked.append((max(due - lead_s, job.arrival), utt.seq, k, job.id, job))
            if job.started_at is None and not terminal:
                blocked = True
    ranked.sort(key=_rank_key)
    return [r[4] for r in ranked]


def _rank_key(row: tuple[float, int, int, int, Job]) -> tuple[float, int, int, int]:
    return row[:4]
