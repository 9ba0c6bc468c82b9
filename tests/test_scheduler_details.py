"""Small contracts of the scheduler that the mutation run of issue 20 found
unpinned (docs/testing.md, "Mutation testing"): each test here failed with
one surviving mutant of ``make mutate MUTATE_ARGS=scheduler``. Fake clock
and fake runner, as the other scheduler tests."""

from __future__ import annotations

import pytest
from scheduler_fakes import Harness

from scheduler import CostModel, JobState, Lane, SchedulerConfig
from scheduler.capacity import clamp_retry
from scheduler.playout import ScheduledUtterance, playback
from scheduler.reservations import StreamReservations

I, B = Lane.INTERACTIVE, Lane.BACKGROUND
CPU = CostModel.default_cpu()
BUCKETS = (256, 512, 1024, 2048)


def flat(seconds: float) -> CostModel:
    return CostModel.from_table({(b, k): seconds for b in (1, 2, 4, 8) for k in BUCKETS})


def test_depth_counts_the_waiting_jobs_of_one_lane():
    h = Harness(cost=CPU, config=SchedulerConfig(admission="queue-only"))
    h.sched.admit(h.utterance("talk", I, 2), 0.0)
    h.sched.admit(h.utterance("book", B, 3, deadline=1e6), 0.0)
    assert (h.sched.depth(I), h.sched.depth(B)) == (2, 3)


def test_a_held_background_place_does_not_take_a_live_jobs_estimate():
    # The nominal job that judges an empty stream must not share an id with
    # a live one (the Harness numbers jobs from 1): the live job's finish
    # estimate would become the nominal's, and look late.
    h = Harness(cost=CPU)
    job = h.job("chapter", B, length=40)
    assert job.id == 1
    h.sched.admit([job], 0.0)
    forecast = h.sched.forecast
    alone = forecast.finish_times([job], 0.0, safety=h.config.admission_safety)[job.id]
    job.deadline = 1.5 * alone
    assert h.sched.admit_empty("narration", B, 0.0, 0.0) is None


def test_an_empty_stream_is_judged_at_the_shortest_prompt_bucket():
    # 32 prompt positions + the nominal sentence fit a 128 KV bucket, where a
    # stream keeps real time; 64 would not, and strict admission would refuse.
    cost = CostModel.from_table({(b, k): {128: 0.005, 256: 1.0}[k]
                                 for b in (1, 2, 4, 8) for k in (128, 256)})
    cfg = SchedulerConfig(kv_buckets=(128, 256), admission="strict")
    h = Harness(cost=cost, config=cfg)
    assert h.sched.admit_empty("turn", I, 0.0, 0.0) is None


@pytest.mark.parametrize(("hold_s", "held"), [(0.0, False), (0.5, True)])
def test_a_reservation_is_held_for_any_positive_time(hold_s, held):
    places = StreamReservations(hold_s)
    places.hold("turn", 0.0)
    assert ("turn" in places) is held
    assert places.count(0.5 - 1e-9) == int(held) and places.count(0.5) == 0


def test_cost_rows_keep_their_smoothing_factor():
    rows = [{"batch": 1, "bucket": 256, "seconds": 0.04}]
    assert CostModel.from_json_rows(rows, alpha=0.5).alpha == 0.5


def test_tokens_per_second_is_rows_over_step_time():
    cost = flat(0.02)
    assert cost.tokens_per_second(4, 256) == pytest.approx(200.0)


def test_playback_of_an_unknown_segment_raises_key_error():
    utt = ScheduledUtterance("u", I, 1, 0.0)
    with pytest.raises(KeyError) as info:
        playback(utt, 3, 0.3)
    assert info.value.args == (3,)


def test_saturation_gives_a_retry_hint_only_at_capacity():
    cfg = SchedulerConfig(max_slots=4, admission="queue-only")
    h = Harness(cost=flat(0.010), config=cfg)
    h.now = 100.0  # a hint is a wait from now, not a time on the clock
    assert h.sched.saturation(h.now).retry_after_s is None
    for k in range(4):
        h.sched.admit(h.utterance(f"s{k}", I, 1, length=50), h.now)
    load = h.sched.saturation(h.now)
    assert load.streams >= load.capacity
    expected = clamp_retry(h.sched.capacity.earliest_end(h.now) - h.now, cfg)
    assert load.retry_after_s == pytest.approx(expected) and load.retry_after_s < 5.0


def test_each_out_of_memory_step_is_counted_once():
    h = Harness(cost=CPU)
    for i in range(4):
        h.sched.admit([h.job(f"u{i}", B, length=5, deadline=1e6)], 0.0)
    h.runner.oom_above = 1
    h.step()  # 4 rows: out of memory, split to 2
    assert h.sched.counters["oom_splits"] == 1
    h.run()  # each pair of 2 rows: out of memory again, split to 1
    assert h.sched.counters["oom_splits"] == 3


def test_a_prefill_cancelled_during_an_out_of_memory_step_is_not_released():
    h = Harness(cost=CPU)
    jobs = [h.job(f"u{i}", B, length=5, deadline=1e6) for i in range(2)]
    for job in jobs:
        h.sched.admit([job], 0.0)
    plan = h.sched.schedule(h.now)
    assert set(plan.prefill) == {j.id for j in jobs}
    h.sched.cancel(jobs[0].id, h.now)  # while the step runs
    h.runner.oom_above = 1
    out = h.runner.execute(plan)
    assert h.sched.update(plan, out, h.now) == []
    h.runner.oom_above = None
    h.run()  # the fake runner raises on a release of a slot it never filled
    assert jobs[0].state is JobState.CANCELLED and h.finished() == [jobs[1].id]

