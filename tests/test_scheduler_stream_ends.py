"""``InteractiveCapacity.schedule_streams``: list scheduling of the admitted
streams on the model's slots, checked against ends worked out by hand (the
mutation run of issue 20 found its arithmetic unpinned)."""

from __future__ import annotations

import pytest
from scheduler_fakes import Harness

from scheduler import JobState, Lane
from scheduler.jobs import Job
from scheduler.playout import ScheduledUtterance
from scheduler.reservations import NOMINAL_CODES

_ids = iter(range(1, 1 << 20))


def stream(seq: int, *jobs: tuple[JobState, int]) -> ScheduledUtterance:
    """An interactive stream whose segments are (state, codes still to come)."""
    utt = ScheduledUtterance(key=f"s{seq}", lane=Lane.INTERACTIVE, seq=seq, arrival=0.0)
    for index, (state, codes) in enumerate(jobs):
        job = Job(id=next(_ids), utterance=utt.key, index=index, lane=Lane.INTERACTIVE,
                  prompt_len=20, est_tokens=codes)
        job.state = state
        utt.segments[index] = job
    return utt


A, W, F = JobState.ACTIVE, JobState.WAITING, JobState.FINISHED


def schedule(streams, now, interval, room, **held):
    return Harness().sched.capacity.schedule_streams(streams, now, interval, room, **held)


def test_streams_end_where_list_scheduling_puts_them():
    streams = [
        # Two sentences hold slots (the next one started early): the waiting
        # third follows the one that ends last, whichever is listed first.
        stream(1, (A, 8), (A, 5), (W, 3)),
        stream(2, (A, 2), (F, 40)),  # a finished sentence holds nothing
        stream(4, (W, 4), (W, 6)),  # no slot yet: waits for one, after seq 3
        stream(3, (W, 2)),
    ]
    ends, free = schedule(streams, now=10.0, interval=2.0, room=4, held=1)
    # Slots: 10+16+(3+1)*2 = 34, 10+10 = 20, 10+4 = 14, and a free one at 10.
    # Seq 3 takes the free slot (10 + 3*2 = 16), seq 4 the one freed at 14
    # (14 + (5+7)*2 = 38), the held place the one freed at 16 (+ a nominal
    # first sentence), and the next stream would get the slot freed at 20.
    assert ends == [14.0, 16.0, 34.0, 38.0, 16.0 + (NOMINAL_CODES + 1) * 2.0]
    assert free == 20.0


def test_the_latest_running_sentence_takes_the_waiting_ones_when_listed_second():
    streams = [stream(0, (A, 2)), stream(1, (A, 5), (A, 8), (W, 3))]
    ends, free = schedule(streams, now=0.0, interval=1.0, room=3)
    assert ends == [2.0, 12.0] and free == 2.0


def test_with_no_slot_at_all_a_waiting_stream_starts_now():
    ends, free = schedule([stream(1, (W, 2))], now=5.0, interval=1.0, room=0)
    assert ends == [8.0] and free == 8.0
    assert schedule([], now=5.0, interval=1.0, room=0) == ([], 5.0)


@pytest.mark.parametrize("held", [0, 2])
def test_held_places_add_one_end_each_and_none_by_default(held):
    streams = [stream(1, (A, 3))]
    ends, _ = schedule(streams, 0.0, 1.0, 2, held=held)
    assert len(ends) == 1 + held
    assert schedule(streams, 0.0, 1.0, 2) == schedule(streams, 0.0, 1.0, 2, held=0)
