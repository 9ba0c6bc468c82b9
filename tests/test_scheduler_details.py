"""Small contracts of the scheduler that the mutation run of issue 20 found
unpinned (docs/testing.md, "Mutation testing"): each test here failed with
one surviving mutant of ``make mutate MUTATE_ARGS=scheduler``. Fake clock
and fake runner, as the other scheduler tests."""

from __future__ import annotations

import pytest
from scheduler_fakes import Harness

from scheduler import CODES_PER_SECOND, CostModel, JobState, Lane, RefusalReason, SchedulerConfig
from scheduler.admission import Admission
from scheduler.capacity import StartEstimate, clamp_retry
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



@pytest.mark.parametrize(("alpha", "ok"), [(1.0, True), (1.0 + 1e-9, False), (1e-9, True), (0.0, False)])
def test_the_smoothing_factor_is_in_the_half_open_unit_interval(alpha, ok):
    table = {(1, 1): 0.01}  # the smallest shape there is
    if ok:
        assert CostModel(table, alpha).alpha == alpha
    else:
        with pytest.raises(ValueError):
            CostModel(table, alpha)


def test_the_cpu_profile_adds_a_tenth_per_kv_doubling():
    cpu = CostModel.default_cpu()  # built here: a module-level one is built before a mutant acts
    assert cpu.step_time(1, 512) / cpu.step_time(1, 256) == pytest.approx(1.1)
    assert cpu.step_time(1, 2048) / cpu.step_time(1, 256) == pytest.approx(1.3)


def test_an_undefined_wait_hints_the_longest_retry():
    cfg = SchedulerConfig()
    assert clamp_retry(float("nan"), cfg) == cfg.retry_after_max_s


def test_release_says_whether_a_place_was_held():
    places = StreamReservations(5.0)
    places.hold("turn", 0.0)
    assert places.release("turn") is True and places.release("turn") is False


def _observed(table, *steps):
    cost = CostModel.from_table(table, alpha=1.0)
    for shape, seconds in steps:
        cost.observe(*shape, seconds)
    return cost


@pytest.mark.parametrize("grid", [True, False])
def test_a_shape_that_got_dearer_raises_every_shape_that_dominates_it(grid):
    table = {(1, 256): 0.010, (1, 512): 0.011, (1, 1024): 0.012, (2, 256): 0.012,
             (2, 512): 0.020, (2, 1024): 0.021}
    if not grid:
        del table[(1, 1024)]
    # a longer KV at the same batch (one observed step moves at most 1.5x)
    cost = _observed(table, ((2, 256), 0.018), ((2, 256), 0.027))
    assert cost.step_time(2, 512) == cost.step_time(2, 1024) == pytest.approx(0.027)
    # a bigger batch at the same KV
    cost = _observed(table, ((1, 512), 0.0165), ((1, 512), 0.02475))
    assert cost.step_time(2, 512) == pytest.approx(0.02475)
    assert cost.step_time(1, 256) == pytest.approx(0.010)


@pytest.mark.parametrize(("sizes", "rows", "cap"), [
    ((1, 2, 4, 8), 8, 4), ((1, 2, 4, 8), 4, 2), ((1, 2, 4, 8), 3, 2), ((1, 2, 4, 8), 2, 1),
    ((1, 8), 2, 1),  # half the padded batch would be 4: fewer rows than before, always
])
def test_out_of_memory_halves_the_padded_batch_below_the_rows_it_had(sizes, rows, cap):
    h = Harness(cost=flat(0.010), config=SchedulerConfig(batch_sizes=sizes))  # all rows at once
    jobs = [h.job(f"u{i}", B, length=5, deadline=1e6) for i in range(rows)]
    for job in jobs:
        h.sched.admit([job], 0.0)
    h.runner.oom_above = 0
    assert len(h.step().jobs) == rows
    assert [j.batch_cap for j in jobs] == [cap] * rows


def test_a_cancelled_job_ends_now():
    h = Harness(cost=CPU)
    [job] = h.utterance("u", I, 1)
    h.sched.admit([job], 0.0)
    h.sched.cancel(job.id, 3.0)
    assert job.ended_at == 3.0


def test_later_background_segments_are_refused_when_late():
    h = Harness(cost=CPU)
    h.sched.admit([h.job("book", B, deadline=1e6)], 0.0)
    late = h.job("book", B, index=1, length=500, deadline=1.0)
    assert h.sched.add(late, 0.0).reason is RefusalReason.DEADLINE_UNMEETABLE
    # and the first segments of one accepted empty
    assert h.sched.admit_empty("notes", B, 0.0, 0.0) is None
    first = h.job("notes", B, length=500, deadline=1.0)
    assert h.sched.add(first, 0.0).reason is RefusalReason.DEADLINE_UNMEETABLE


def test_segments_of_an_empty_stream_stay_in_its_lane():
    h = Harness(cost=CPU)
    assert h.sched.admit_empty("turn", I, 0.0, 0.0) is None
    for index in range(2):
        assert h.sched.add(h.job("turn", I, index=index), 0.0) is None
    with pytest.raises(ValueError):
        h.sched.add(h.job("turn", B, index=2), 0.0)


@pytest.mark.parametrize(("queue", "expected"), [(0, 0.05), (1, None)])
def test_a_full_background_queue_hints_its_earliest_end(queue, expected):
    cfg = SchedulerConfig(admission="queue-only", max_queue_background=queue)
    h = Harness(cost=CPU, config=cfg)
    h.now = 100.0
    if queue:
        assert h.sched.admit([h.job("a", B, length=40, deadline=1e6)], h.now) is None
        forecast = h.sched.forecast
        live = list(h.sched.book.jobs(B).values())
        expected = min(forecast.finish_times(live, h.now).values()) - h.now
    refusal = h.sched.admit([h.job("b", B, deadline=1e6)], h.now)
    assert refusal.retry_after_s == pytest.approx(expected)


def one_row(seconds: float) -> CostModel:
    """Riders cost too much: one row a step, and a quarter of the steps go to
    background, so two streams get codes half as often as one."""
    return CostModel.from_table({(b, k): seconds * {1: 1, 2: 3, 4: 6, 8: 12}[b]
                                 for b in (1, 2, 4, 8) for k in BUCKETS})


@pytest.mark.parametrize(("seconds", "why"), [(0.010, "capacity"), (0.003, "behind")])
def test_a_capacity_refusal_hints_a_wait_from_now(seconds, why):
    h = Harness(cost=one_row(seconds))  # a stream capacity of 1, then of 2
    h.now = 100.0
    assert h.sched.admit(h.utterance("s", I, 1, length=400), h.now) is None
    for _ in range(3):
        h.step()
    if why == "behind":
        h.now += 1.0  # its codes stopped coming: its audio ran out
    refusal = h.sched.admit(h.utterance("next", I, 1, length=50), h.now)
    assert why in refusal.message and refusal.retry_after_s < 10.0  # 30 (the bound) from 0


def test_a_lone_stream_is_real_time_just_at_the_headroom():
    target = CODES_PER_SECOND * 1.3
    for factor, alone in [(1 - 1e-6, True), (1 + 1e-6, False)]:
        cap = Harness(cost=flat(factor / target)).sched.capacity
        assert cap.lone_rate(256) == pytest.approx(target / factor)
        assert cap.realtime_alone(256) is alone


def test_a_stream_is_behind_only_past_its_slack():
    h = Harness(cost=one_row(0.010))
    h.sched.admit(h.utterance("s", I, 1, length=400), 0.0)
    for _ in range(5):
        h.step()
    cap, cfg = h.sched.capacity, h.config
    assert cap.interval(2, 256) > cap.interval(1, 256)
    [job] = cap.book.jobs(I).values()
    slack = (cfg.first_audio_steps + 2) * cap.interval(1, 256)
    bound = job.first_code_at + job.tokens / CODES_PER_SECOND + slack
    assert not cap.behind(bound, 256)  # exactly at it: not yet
    assert cap.behind(bound + 1e-9, 256)
    assert not cap.behind(bound - cap.interval(1, 256) / 2, 256)


def test_streams_may_hold_every_slot_but_the_background_lanes_and_one_for_it():
    h = Harness(cost=flat(0.010), config=SchedulerConfig(max_slots=4))
    cap = h.sched.capacity
    assert cap.slot_room() == 4
    h.sched.admit(h.utterance("talk", I, 1, length=50), h.now)
    h.step()
    assert h.sched.book.held(I) == 1 and cap.slot_room() == 4  # streams' own slots count in
    h.sched.admit([h.job("book", B, length=50, deadline=1e6)], h.now)
    assert cap.slot_room() == 3  # one kept for the waiting background job
    h.step()
    assert h.sched.book.held(B) == 1 and h.sched.depth(B) == 0 and cap.slot_room() == 3
    h.sched.admit([h.job("more", B, length=50, deadline=1e6)], h.now)
    assert cap.slot_room() == 3  # it waits, but background already holds a slot
    small = Harness(cost=flat(0.010), config=SchedulerConfig(max_slots=2))
    small.sched.admit([small.job("book", B, length=50, deadline=1e6)], 0.0)
    small.step()
    assert small.sched.capacity.slot_room() == 1


class _SlowPromptCapacity:
    """A capacity with room for the stream, whose first audio alone takes ``alone`` s."""

    def __init__(self, first_audio: float, alone: float) -> None:
        self.estimate = StartEstimate(starts=0.0, first_audio=first_audio, alone=alone)

    def committed(self, now):
        return 0

    def bucket(self, jobs):
        return 256

    def realtime_alone(self, bucket):
        return True

    def keeps_rate(self, streams, bucket):
        return True

    def behind(self, now, bucket):
        return False

    def earliest_end(self, now):
        return now

    def start_estimate(self, jobs, now):
        return self.estimate


@pytest.mark.parametrize(("alone", "budget"), [(0.1, 0.5), (1.0, 1.3)])
@pytest.mark.parametrize("over", [-1e-6, 0.0, 1e-6])
def test_first_audio_is_due_within_the_budget_or_its_own_time_plus_headroom(alone, budget, over):
    """The budget is the first-audio bound, or (1 + headroom) x the request's
    own first audio on an idle model when that is longer (a long prompt);
    due exactly at the budget is admitted."""
    h = Harness(cost=CPU)
    config = SchedulerConfig(realtime_headroom=0.3)
    now = 10.0
    capacity = _SlowPromptCapacity(first_audio=now + budget + over, alone=alone)
    admission = Admission(config, h.sched.book, h.sched.forecast, capacity, first_audio_s=0.5)
    refusal = admission.refusal(I, [h.job("s", I)], now)
    assert (refusal is None) is (over <= 0)
    if refusal is not None:
        assert refusal.reason is RefusalReason.OVERLOADED
        assert refusal.message == (f"first audio expected in {(budget + over) * 1000:.0f} ms, "
                                   f"over the {budget * 1000:.0f} ms budget")


def probe_end(h: Harness, job, now: float, safety: float) -> float:
    """The forecast's end of ``job`` if it ran alone from ``now``."""
    return h.sched.forecast.finish_times([job], now, safety=safety)[job.id]


def _alone(h: Harness, length: int, now: float, safety: float) -> float:
    """``probe_end`` of a new ``length``-code background job (not admitted)."""
    return probe_end(h, h.job("probe", B, length=length), now, safety)


def test_a_deadline_inside_the_safety_margin_is_refused_with_its_figures():
    # Between the bare estimate and the estimate times admission_safety: the
    # margin is what refuses it; the message counts from now, not from 0.
    h = Harness(cost=CPU)
    now = h.now = 100.0
    bare = _alone(h, 200, now, 1.0)
    safe = _alone(h, 200, now, h.config.admission_safety)
    assert safe > bare + 0.5
    deadline = (bare + safe) / 2
    ref = h.sched.admit([h.job("book", B, length=200, deadline=deadline)], now)
    assert ref is not None and ref.reason is RefusalReason.DEADLINE_UNMEETABLE
    assert ref.message == (f"estimated completion in {safe - now:.1f} s, "
                           f"deadline in {deadline - now:.1f} s")
    assert h.sched.admit([h.job("book2", B, length=200, deadline=safe + 0.1)], now) is None


def test_work_already_late_does_not_block_a_new_admission():
    # "a" was on time when admitted; by the time "b" arrives nothing has run
    # and "a" can no longer make its deadline. That is not b's doing.
    h = Harness(cost=CPU, config=SchedulerConfig(batch_sizes=(1,)))
    a_end = _alone(h, 200, 0.0, h.config.admission_safety)
    a = h.job("a", B, length=200, deadline=a_end + 1.0)
    assert h.sched.admit([a], 0.0) is None
    now = h.now = 5.0  # "a" now ends after its deadline, with or without "b"
    assert probe_end(h, a, now, h.config.admission_safety) > a.deadline
    assert h.sched.admit([h.job("b", B, length=50, deadline=1e6)], now) is None


def test_late_means_late_with_the_safety_margin():
    # "a" makes its deadline by the bare estimate but not with the margin:
    # admission counts it as late already, so it does not block "b" either.
    h = Harness(cost=CPU, config=SchedulerConfig(batch_sizes=(1,)))
    a = h.job("a", B, length=200, deadline=1e6)
    assert h.sched.admit([a], 0.0) is None
    bare, safe = (probe_end(h, a, 0.0, s) for s in (1.0, h.config.admission_safety))
    a.deadline = (bare + safe) / 2
    assert h.sched.admit([h.job("b", B, length=50, deadline=1e6)], 0.0) is None


@pytest.mark.parametrize("interactive_batch", [1, 4])
def test_a_held_place_is_a_stream_ahead_of_a_new_one(interactive_batch):
    # Steps cost 20 ms a row, so riders are never free and a stream's code
    # interval grows with the streams sharing the model. One place held by
    # an empty stream, nothing live: the new stream is the second stream,
    # its prefill step carries two rows, and its codes come at the interval
    # of two streams: first audio = its start + (1 + prefill) steps of two
    # rows + first_audio_steps intervals of two streams.
    cost = CostModel.from_table({(b, k): 0.02 * b for b in (1, 2, 4, 8) for k in BUCKETS})
    cfg = SchedulerConfig(interactive_batch_size=interactive_batch, stream_reservation_s=5.0)
    h = Harness(cost=cost, config=cfg)
    assert h.sched.admit_empty("held", I, 0.0, 0.0) is None
    capacity = h.sched.capacity
    jobs = h.utterance("new", I, 1, length=40)
    bucket = capacity.bucket(jobs)
    assert capacity.rows(bucket) == interactive_batch
    two = capacity.interval(2, bucket)
    one = capacity.interval(1, bucket)
    assert two == pytest.approx(2 * one)  # two rows cost twice one, or one row carries both
    est = capacity.start_estimate(jobs, 0.0)
    step = 0.02 * min(2, interactive_batch)
    assert est.first_audio - est.starts == pytest.approx(3 * step + cfg.first_audio_steps * two)
    assert est.alone == pytest.approx(3 * 0.02 + cfg.first_audio_steps * one)


def test_step_counters_count_each_plan_once_by_lane():
    h = Harness()
    h.sched.admit(h.utterance("book", B, 2, length=20, deadline=1e6), 0.0)
    h.sched.admit(h.utterance("talk", I, 1, length=20), 0.0)
    plans = h.run()
    assert h.sched.last_plan is plans[-1]
    lanes = [p.lane for p in plans]
    assert {I, B} <= set(lanes)
    c = h.sched.counters
    assert (c["steps"], c["interactive_steps"], c["background_steps"]) == (
        len(plans), lanes.count(I), lanes.count(B))
