"""Streams that ride beside the interactive batch (``batching.add_stream_riders``).

Costs are hand-made tables of a CPU where a bigger batch costs more but
less than its rows in turns: batch 1 12 ms, 2 17.5 ms, 4 25 ms (real time
is a code every 21.3 ms; with admission's 30% headroom a step may take
16.4 ms). Two streams taking turns at 12 ms a step get a code every 24 ms
each and both run dry; in one step of 17.5 ms both keep real time, so
they share it. Where turns keep real time with the headroom (8 ms a
step) batch 1 stays batch 1, as before; in between (9.5 ms: a code every
19 ms in turns) the shared step still gives each stream its codes sooner.
"""

from __future__ import annotations

import pytest
from scheduler_fakes import Harness

from scheduler import CostModel, JobState, Lane, SchedulerConfig
from scheduler.batching import SlotBudget, add_stream_riders
from scheduler.jobs import CODES_PER_SECOND, Job

I = Lane.INTERACTIVE
CFG = SchedulerConfig(batch_sizes=(1, 2, 4), kv_buckets=(256, 512), admission="queue-only")


def cpu(batch_1: float, batch_2: float = 0.0175, batch_4: float = 0.025) -> CostModel:
    steps = {1: batch_1, 2: batch_2, 4: batch_4}
    return CostModel.from_table({(b, k): steps[b] for b in CFG.batch_sizes for k in CFG.kv_buckets})


SLOW, FAST = cpu(0.012), cpu(0.008)


def stream(n: int, state: JobState = JobState.ACTIVE) -> Job:
    j = Job(id=n, utterance=f"u{n}", index=0, lane=I, prompt_len=20, est_tokens=100,
            max_tokens=2048, deadline=1.0, arrival=0.0)
    j.state = state
    return j


def ids(jobs: list[Job]) -> list[int]:
    return [j.id for j in jobs]


def test_running_streams_that_fall_behind_in_turns_share_a_step():
    assert 2 * 0.012 * CODES_PER_SECOND > 1.0  # turns: a code every 24 ms, behind real time
    assert CFG.realtime_step_s < 0.0175  # over the headroom's bound: the old rule kept batch 1
    assert ids(add_stream_riders(CFG, SLOW, [stream(1)], [stream(2)], SlotBudget(4))) == [2]


def test_streams_that_keep_real_time_in_turns_do_not_ride_in_a_dearer_step():
    assert 2 * 0.008 * CODES_PER_SECOND <= 1.0  # turns: a code every 16 ms each
    assert add_stream_riders(CFG, FAST, [stream(1)], [stream(2)], SlotBudget(4)) == []


def test_a_step_cheaper_than_turns_that_keep_real_time_without_headroom_is_taken():
    turns_keep_up = cpu(0.0095)  # turns: a code every 19 ms each, under 21.3, over 16.4
    assert ids(add_stream_riders(CFG, turns_keep_up, [stream(1)], [stream(2)], SlotBudget(4))) == [2]


def test_ranked_order_holds_where_everything_rides():
    # A launch-bound table: every step within the headroom's bound, so a new
    # stream's first segment ranked first rides first, as before.
    flat = cpu(0.009, 0.010, 0.012)
    new = stream(3, JobState.WAITING)
    riders = add_stream_riders(CFG, flat, [stream(1)], [new, stream(2)], SlotBudget(4))
    assert ids(riders) == [3, 2]


def test_a_step_dearer_than_the_turns_it_replaces_is_not_taken():
    # Four streams at 12 ms: turns give each a code every 48 ms; a step of 4
    # at 50 ms would be slower still, so only the step of 2 (17.5 ms) forms:
    # two of the three ride.
    dear = cpu(0.012, batch_4=0.050)
    riders = add_stream_riders(CFG, dear, [stream(1)], [stream(2), stream(3), stream(4)], SlotBudget(4))
    assert ids(riders) == [2]
    cheap = add_stream_riders(CFG, SLOW, [stream(1)], [stream(2), stream(3), stream(4)], SlotBudget(4))
    assert ids(cheap) == [2, 3, 4]


def test_a_first_segment_does_not_ride_past_the_headroom():
    # A new stream's first segment (waiting, not running) is not behind: it
    # rides only within realtime_step_s, as before; the running one rides.
    new = stream(3, JobState.WAITING)
    riders = add_stream_riders(CFG, SLOW, [stream(1)], [new, stream(2)], SlotBudget(4))
    assert ids(riders) == [2]
    assert add_stream_riders(CFG, SLOW, [stream(1)], [new], SlotBudget(4)) == []


def test_a_new_streams_prefill_leading_the_step_takes_no_running_riders_past_the_headroom():
    leader = stream(1, JobState.WAITING)
    assert add_stream_riders(CFG, SLOW, [leader], [stream(2)], SlotBudget(4)) == []


@pytest.mark.parametrize(("cost", "shared"), [(SLOW, True), (FAST, False)])
def test_two_streams_served_together_only_where_turns_fall_behind(cost, shared):
    h = Harness(config=CFG, cost=cost)
    for key in ("a", "b"):
        assert h.sched.admit(h.utterance(key, I, 1, length=60), h.now) is None
    plans = h.run()
    rows = [len(p.decode) for p in plans if p.decode and not p.prefill]
    assert len(rows) > 50
    if shared:  # both streams in (nearly) every step: 60 codes each in ~60 steps
        assert rows.count(2) >= 55 and len(plans) <= 65
    else:  # batch 1 stays batch 1: 120 steps
        assert set(rows) == {1} and len(plans) >= 120
    # Every code was served either way, and both streams finished.
    assert sum(len(p.decode) + len(p.prefill) for p in plans) == 120
    assert sorted(e.outcome.value for e in h.events) == ["finished", "finished"]


def test_turns_count_running_streams_only():
    # Running streams 2 and 3 beside 1: turns give each a code every 36 ms, so
    # a step of 4 rows at 40 ms is dearer: only 2 rides. A waiting first
    # segment is not a turn (counting it would allow 48 ms).
    dear = cpu(0.012, batch_4=0.040)
    riders = add_stream_riders(CFG, dear, [stream(1)], [stream(4, JobState.WAITING), stream(2), stream(3)],
                               SlotBudget(4))
    assert ids(riders) == [2]


def test_turns_are_priced_at_the_leading_batchs_own_step():
    # Two leaders (one step of 2 at 17.5 ms) and a third stream: turns give each
    # a code every 26.25 ms; a step of 4 at 30 ms is dearer, at 25 ms cheaper.
    leaders = [stream(1), stream(2)]
    assert add_stream_riders(CFG, cpu(0.012, batch_4=0.030), leaders, [stream(3)], SlotBudget(4)) == []
    assert ids(add_stream_riders(CFG, SLOW, leaders, [stream(3)], SlotBudget(4))) == [3]


def test_a_running_stream_still_rides_within_the_headroom_where_turns_are_cheaper():
    # Turns: 16 ms; a step of 2 at 16.2 ms is dearer than turns but within
    # realtime_step_s (16.4 ms), which the old rule allowed: it still rides.
    close = cpu(0.008, batch_2=0.0162)
    assert ids(add_stream_riders(CFG, close, [stream(1)], [stream(2)], SlotBudget(4))) == [2]


def sentence(n: int, utterance: str, index: int) -> Job:
    j = stream(n)
    j.utterance, j.index = utterance, index
    return j


def test_an_utterances_next_sentence_rides_only_within_the_headroom():
    # Sentence 2 of the leader's own utterance plays after sentence 1: it is
    # not a stream taking turns, so it keeps the old bound (17.5 > 16.4 ms).
    assert add_stream_riders(CFG, SLOW, [stream(1)], [sentence(2, "u1", 1)], SlotBudget(4)) == []
    # Another stream's two sentences: its first in rank rides, its next does not.
    other = [sentence(2, "u9", 0), sentence(3, "u9", 1)]
    assert ids(add_stream_riders(CFG, SLOW, [stream(1)], other, SlotBudget(4))) == [2]
