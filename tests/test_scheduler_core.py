"""The two-lane scheduler's policy, on a fake runner and a fake clock."""

import pytest
from scheduler_fakes import Harness

from scheduler import (
    CostModel,
    JobOutcome,
    JobState,
    Lane,
    Refusal,
    RefusalReason,
    SchedulerConfig,
    StepOutput,
)

I, B = Lane.INTERACTIVE, Lane.BACKGROUND

# A CPU-like table: a bigger batch costs noticeably more, so nothing rides along.
CPU = CostModel.default_cpu()
# On it one interactive stream is all capacity admission takes at a time; the
# policy tests that need several streams at once admit by queue bound alone.
QUEUE_ONLY = SchedulerConfig(admission="queue-only")


def test_interactive_preempts_a_running_background_batch_at_the_next_step():
    h = Harness(cost=CPU)
    assert h.sched.admit(h.utterance("bg", B, 3, length=50, deadline=1e6), h.now) is None
    for _ in range(5):
        plan = h.step()
        assert plan.lane is B
    bg_ids = set(plan.jobs)
    [ij] = h.utterance("talk", I, 1, length=5)
    assert h.sched.admit([ij], h.now) is None
    plan = h.step()
    assert plan.lane is I and plan.jobs == (ij.id,) and plan.batch_size == 1
    # The preempted background jobs keep their KV slots while interactive runs.
    assert bg_ids <= h.runner.slots
    while plan.lane is I:
        plan = h.step()
    assert set(plan.decode) == bg_ids  # resumed, not prefilled again
    h.run()
    assert sorted(h.finished()) == sorted([ij.id, *bg_ids])


def test_interactive_jobs_run_earliest_first_audio_deadline_first():
    h = Harness(cost=CPU, config=QUEUE_ONLY)
    late = h.job("late", I, deadline=5.0)
    early = h.job("early", I, deadline=1.0)
    h.sched.admit([late], 0.0)
    h.sched.admit([early], 0.0)
    assert h.step().prefill == (early.id,)


def test_a_stream_about_to_run_dry_goes_before_a_new_first_code():
    h = Harness(cost=CPU, config=SchedulerConfig(interactive_start_lead_s=0.0))
    [a] = h.utterance("a", I, 1, length=400)
    h.sched.admit([a], 0.0)
    for _ in range(60):  # at ~45 ms a step, a falls behind real time
        h.step()
    [b] = h.utterance("b", I, 1, length=5)
    b.deadline = h.now + 10.0
    h.sched.admit([b], h.now)
    assert h.step().jobs == (a.id,)


def test_background_is_earliest_deadline_first():
    h = Harness(cost=CPU, config=SchedulerConfig(batch_sizes=(1,), max_slots=4))
    jobs = {d: h.job(f"u{d}", B, deadline=d, length=3) for d in (300.0, 100.0, 200.0)}
    for job in jobs.values():
        assert h.sched.admit([job], 0.0) is None
    order = []
    for plan in h.run():
        order += plan.prefill
    assert order == [jobs[100.0].id, jobs[200.0].id, jobs[300.0].id]


def test_batch_size_is_rounded_up_to_a_graph_size():
    h = Harness(cost=CPU)
    h.sched.admit([h.job(f"u{i}", B, deadline=1e6) for i in range(1)], 0.0)
    for i in range(2):
        h.sched.admit([h.job(f"v{i}", B, deadline=1e6)], 0.0)
    plan = h.step()
    assert len(plan.prefill) == 3 and plan.prefill_batch == 4
    assert plan.prompt_bucket == 32  # prompts of 20 tokens
    plan = h.step()
    assert len(plan.decode) == 3 and plan.batch_size == 4 and plan.kv_bucket == 256


def test_plans_hand_out_distinct_slots_and_reuse_freed_ones():
    h = Harness(cost=CPU, config=SchedulerConfig(max_slots=4))
    first = h.utterance("a", B, 3, length=2, deadline=1e6)
    assert h.sched.admit(first, 0.0) is None
    plan = h.step()
    assert plan.prefill_slots == (0,) and plan.work == (None,)
    h.sched.cancel(first[0].id, h.now)
    plan = h.step()
    # The cancelled job's slot is free at once; the release comes first.
    assert plan.release == (first[0].id,) and plan.prefill_slots == (0,)


def test_new_background_jobs_join_a_running_batch_at_a_step_boundary():
    h = Harness(cost=CPU)
    h.sched.admit([h.job("a", B, deadline=1e6, length=20)], 0.0)
    h.step()
    new = h.job("b", B, deadline=1e6, length=20)
    h.sched.admit([new], h.now)
    plan = h.step()
    assert plan.prefill == (new.id,) and len(plan.decode) == 1
    assert (plan.prefill_batch, plan.batch_size) == (1, 1)


def test_kv_bucket_covers_the_longest_job_and_steep_buckets_split_batches():
    # Long KV four times dearer than short: a short and a long job run apart.
    steep = CostModel.from_table({(b, k): 0.01 * b ** 0.2 * (1 if k == 256 else 4)
                                  for b in (1, 2, 4, 8) for k in (256, 512, 1024, 2048)})
    h = Harness(cost=steep)
    short = h.job("s", B, deadline=100.0, length=20, prompt_len=20)
    long = h.job("l", B, deadline=200.0, length=900, prompt_len=200)
    h.sched.admit([short], 0.0)
    h.sched.admit([long], 0.0)
    assert h.step().prefill == (short.id,)
    plan = h.step()
    assert plan.decode == (short.id,) and plan.kv_bucket == 256
    # On a flat (GPU-like) table they share one batch, bucket of the longer.
    g = Harness(cost=CostModel.default_gpu())
    a = g.job("s", B, deadline=100.0, length=20, prompt_len=20)
    b = g.job("l", B, deadline=200.0, length=900, prompt_len=400)
    g.sched.admit([a], 0.0)
    g.sched.admit([b], 0.0)
    assert set(g.step().prefill) == {a.id, b.id}
    plan = g.step()
    assert set(plan.decode) == {a.id, b.id} and plan.kv_bucket == 512


def test_background_rides_in_interactive_steps_when_nearly_free():
    h = Harness(cost=CostModel.default_gpu())
    h.sched.admit(h.utterance("bg", B, 1, length=30, deadline=1e6), 0.0)
    h.sched.admit(h.utterance("talk", I, 1, length=30), 0.0)
    plan = h.step()
    assert plan.lane is I and len(plan.jobs) == 2 and plan.prefill_batch == 2
    plan = h.step()
    assert plan.lane is I and len(plan.decode) == 2 and plan.batch_size == 2
    assert h.sched.counters["rider_steps"] == 2


def test_segments_start_in_order():
    h = Harness(cost=CPU)
    jobs = h.utterance("u", B, 4, length=5, deadline=1e6)
    h.sched.admit(list(reversed(jobs)), 0.0)
    started = []
    for plan in h.run():
        started += plan.prefill
    assert started == [j.id for j in jobs]


def test_next_interactive_segment_is_due_when_the_previous_audio_ends():
    # No riders: the second segment starts on its own deadline, not for free.
    h = Harness(cost=CostModel.default_gpu(), config=SchedulerConfig(rider_overhead=0.0))
    first, second = h.utterance("u", I, 2, length=94)  # ~2 s of audio each
    h.sched.admit([first, second], 0.0)
    starts = {}
    while (plan := h.step()) is not None:
        for job_id in plan.prefill:
            starts[job_id] = h.now
    first_end_of_audio = first.first_code_at + 94 / 46.875
    # Started ahead of the gap, by about the start lead, not right away.
    assert starts[second.id] < first_end_of_audio
    assert starts[second.id] > first.first_code_at + 0.5


def test_each_new_segment_names_the_one_whose_audio_it_follows():
    # The runner plays a segment's audio after the one before it (the
    # vocoder holds chunks while the listener has enough): the plan says
    # which job that is, riding along or not; a first segment follows none.
    for cost in (CPU, CostModel.default_gpu()):
        h = Harness(cost=cost, config=QUEUE_ONLY)
        jobs = h.utterance("u", I, 3, length=30)
        other = h.utterance("v", I, 1, length=30)
        h.sched.admit(jobs, 0.0)
        h.sched.admit(other, 0.0)
        followed = {}
        for plan in h.run():
            assert len(plan.follows) == len(plan.prefill)
            followed.update(zip(plan.prefill, plan.follows))
        assert followed == {jobs[0].id: None, jobs[1].id: jobs[0].id, jobs[2].id: jobs[1].id,
                            other[0].id: None}


def test_queue_only_bound_refuses_overloaded_and_queues_nothing():
    h = Harness(config=SchedulerConfig(max_queue_background=3, admission="queue-only"))
    assert h.sched.admit(h.utterance("a", B, 3, deadline=1e6), 0.0) is None
    ref = h.sched.admit(h.utterance("b", B, 1, deadline=1e6), 0.0)
    assert isinstance(ref, Refusal) and ref.reason is RefusalReason.OVERLOADED
    assert ref.retry_after_s is not None and ref.retry_after_s > 0
    assert h.sched.depth(B) == 3
    h2 = Harness(config=SchedulerConfig(max_queue_interactive=1, admission="queue-only"))
    assert h2.sched.admit(h2.utterance("a", I, 1), 0.0) is None
    assert h2.sched.admit(h2.utterance("b", I, 1), 0.0).reason is RefusalReason.OVERLOADED


def test_capacity_backstop_counts_utterances_not_their_segments():
    h = Harness(config=SchedulerConfig(max_queue_background=2, max_queue_interactive=2))
    # Twenty sentences are one utterance: admitted, and its later segments too.
    assert h.sched.admit(h.utterance("a", B, 20, deadline=1e6), 0.0) is None
    assert h.sched.admit(h.utterance("b", B, 20, deadline=1e6), 0.0) is None
    ref = h.sched.admit(h.utterance("c", B, 1, deadline=1e6), 0.0)
    assert ref is not None and ref.reason is RefusalReason.OVERLOADED and "2 utterances" in ref.message
    assert h.sched.add(h.job("a", B, index=20, deadline=1e6), 0.0) is None
    assert h.sched.admit(h.utterance("i", I, 30), 0.0) is None


def test_admission_refuses_a_deadline_it_cannot_meet():
    h = Harness(cost=CPU)
    # 500 codes at >= 43 ms a step need > 21 s.
    ref = h.sched.admit([h.job("a", B, length=500, deadline=10.0)], 0.0)
    assert ref is not None and ref.reason is RefusalReason.DEADLINE_UNMEETABLE
    assert h.sched.depth(B) == 0
    assert h.sched.admit([h.job("b", B, length=500, deadline=60.0)], 0.0) is None


def test_admission_counts_the_work_already_ahead():
    h = Harness(cost=CPU, config=SchedulerConfig(batch_sizes=(1,)))
    assert h.sched.admit([h.job("a", B, length=200, deadline=12.0)], 0.0) is None
    # Alone it would fit in 12 s; behind "a" (EDF, one row) it cannot.
    ref = h.sched.admit([h.job("b", B, length=200, deadline=13.0)], 0.0)
    assert ref is not None and ref.reason is RefusalReason.DEADLINE_UNMEETABLE


def test_admission_protects_admitted_work_from_an_earlier_deadline():
    h = Harness(cost=CPU, config=SchedulerConfig(batch_sizes=(1,)))
    assert h.sched.admit([h.job("a", B, length=200, deadline=12.0)], 0.0) is None
    # "b" would itself finish in time (EDF puts it first) but push "a" late.
    ref = h.sched.admit([h.job("b", B, length=100, deadline=6.0)], 0.0)
    assert ref is not None and ref.reason is RefusalReason.DEADLINE_UNMEETABLE
    assert ref.message == "admitting it would make already accepted work miss its deadline"


def test_admission_accounts_for_interactive_load():
    cfg = SchedulerConfig(batch_sizes=(1,))
    h = Harness(cost=CPU, config=cfg)
    probe = dict(length=150, deadline=9.0)
    idle_probe = h.job("x", B, **probe)
    assert h.sched.admit([idle_probe], 0.0) is None  # fits on an idle model
    h.sched.cancel(idle_probe.id, 0.0)
    h.run()
    # Keep the model busy with interactive-only steps for a while.
    for k in range(8):
        h.sched.admit(h.utterance(f"t{k}", I, 1, length=50), h.now)
        h.run()
    assert h.sched.load.share(h.now) > 0.5
    ref = h.sched.admit([h.job("y", B, **{**probe, "deadline": h.now + 9.0})], h.now)
    assert ref is not None and ref.reason is RefusalReason.DEADLINE_UNMEETABLE


def test_starvation_bound_interleaves_background_when_its_deadline_is_near():
    cfg = SchedulerConfig(urgent_slack_s=5.0, interactive_steps_per_background=3,
                          admission="queue-only")
    h = Harness(cost=CPU, config=cfg)
    h.sched.admit([h.job("bg", B, length=40, deadline=4.0)], 0.0)
    # A steady interactive stream: always one interactive job ready.
    for k in range(30):
        h.sched.admit(h.utterance(f"t{k}", I, 1, length=10), h.now)
    lanes = [p.lane for p in h.run()]
    first_bg = lanes.index(B)
    window = lanes[first_bg:first_bg + 40]
    # Never more than 3 interactive steps in a row while background is urgent.
    runs, run = [], 0
    for lane in window:
        run = run + 1 if lane is I else 0
        runs.append(run)
    assert max(runs) <= 3
    assert first_bg <= 3
    bg_job_end = [e for e in h.events if e.outcome is JobOutcome.FINISHED]
    assert len(bg_job_end) == 31


def test_without_urgency_interactive_has_strict_priority():
    h = Harness(cost=CPU, config=SchedulerConfig(urgent_slack_s=0.0, admission="queue-only"))
    h.sched.admit([h.job("bg", B, length=40, deadline=1e6)], 0.0)
    for k in range(5):
        h.sched.admit(h.utterance(f"t{k}", I, 1, length=10), h.now)
    lanes = [p.lane for p in h.run()]
    # Five streams cannot keep real time here taking turns, so they share
    # steps (batching.add_stream_riders): fewer than 50 steps, all before any B.
    first_bg = lanes.index(B)
    assert set(lanes[:first_bg]) == {I} and set(lanes[first_bg:]) == {B}


def test_background_never_takes_the_interactive_reserve():
    cfg = SchedulerConfig(max_slots=4, interactive_reserved_slots=1)
    h = Harness(cost=CPU, config=cfg)
    for k in range(6):
        h.sched.admit([h.job(f"b{k}", B, length=30, deadline=1e6)], 0.0)
    h.step()
    assert len(h.runner.slots) == 3
    h.sched.admit(h.utterance("t", I, 1, length=3), h.now)
    plan = h.step()
    assert plan.lane is I and len(plan.prefill) == 1
    assert len(h.runner.slots) == 4


@pytest.mark.parametrize("when", ["waiting", "running", "preempted", "in_flight", "finished"])
def test_cancel_in_every_state_frees_the_slot_and_reports_nothing(when):
    h = Harness(cost=CPU)
    [job] = h.utterance("u", B, 1, length=20, deadline=1e6)
    h.sched.admit([job], 0.0)
    if when in ("running", "preempted", "finished"):
        h.step()
    if when == "preempted":
        h.sched.admit(h.utterance("t", I, 1, length=20), h.now)
        assert h.step().lane is I
    if when == "finished":
        h.run()
    if when == "in_flight":
        plan = h.sched.schedule(h.now)
        out = h.runner.execute(plan)
        h.sched.cancel(job.id, h.now)
        h.events += h.sched.update(plan, out, h.now)
    else:
        h.sched.cancel(job.id, h.now)
    before = list(h.events)
    plans = h.run()
    assert all(job.id not in p.jobs for p in plans)
    assert [e for e in h.events if e.job_id == job.id and e not in before] == []
    assert h.sched.active_slots == 0 and h.runner.slots == set()
    if when == "finished":
        assert job.state is JobState.FINISHED
    else:
        assert job.state is JobState.CANCELLED and job.id not in h.finished()


def test_cancel_of_unknown_or_ended_ids_is_ignored():
    h = Harness()
    h.sched.cancel(12345, 0.0)
    assert h.sched.idle


def test_out_of_memory_splits_the_batch_and_retries():
    h = Harness(cost=CPU)
    jobs = [h.job(f"u{i}", B, length=5, deadline=1e6) for i in range(4)]
    for job in jobs:
        h.sched.admit([job], 0.0)
    h.runner.oom_above = 2
    first = h.step()
    assert len(first.jobs) == 4 and first.prefill_batch == 4
    plans = h.run()
    assert all(len(p.jobs) <= 2 for p in plans)
    assert sorted(h.finished()) == sorted(j.id for j in jobs)
    assert h.sched.counters["oom_splits"] >= 1


def test_a_job_out_of_memory_alone_fails():
    h = Harness(cost=CPU)
    [job] = h.utterance("u", I, 1, length=5)
    h.sched.admit([job], 0.0)
    h.step()
    h.runner.oom_above = 0
    h.step()
    assert [(e.job_id, e.outcome.value, e.message) for e in h.events] == [
        (job.id, "failed", "out of device memory")]
    assert job.ended_at == h.now  # at the step's end (pruning reads it)
    h.runner.oom_above = None
    h.run()  # the next plan releases the slot the runner still holds
    assert h.runner.slots == set() and h.sched.active_slots == 0


def test_runner_failures_become_failed_events():
    h = Harness(cost=CPU)
    a, b = (h.job(f"u{i}", B, length=5, deadline=1e6) for i in range(2))
    h.runner.fail.add(a.id)
    h.sched.admit([a], 0.0)
    h.sched.admit([b], 0.0)
    h.run()
    assert {(e.job_id, e.outcome.value) for e in h.events} == {(a.id, "failed"), (b.id, "finished")}


def test_streamed_segments_added_later_follow_the_earlier_ones():
    h = Harness(cost=CPU)
    first = h.job("u", I, 0, length=5)
    h.sched.admit([first], 0.0)
    h.step()
    second = h.job("u", I, 1, length=5)
    assert h.sched.add(second, h.now) is None
    h.run()
    assert h.finished() == [first.id, second.id]


def test_malformed_admissions_raise():
    h = Harness()
    with pytest.raises(ValueError):
        h.sched.admit([], 0.0)
    with pytest.raises(ValueError):
        h.sched.admit([h.job("a", I), h.job("b", I)], 0.0)
    job = h.job("c", I)
    h.sched.admit([job], 0.0)
    with pytest.raises(ValueError):
        h.sched.admit([h.job("c", I, index=1)], 0.0)


def test_schedule_is_none_when_idle_and_update_ignores_unknown_jobs():
    h = Harness()
    assert h.sched.schedule(0.0) is None
    job = h.job("u", B, deadline=1e6)
    h.sched.admit([job], 0.0)
    plan = h.sched.schedule(0.0)
    events = h.sched.update(plan, StepOutput(tokens={job.id: 1, 999: 3}, finished=(999,)), 0.1)
    assert events == []


def test_cost_model_learns_from_measured_decode_steps():
    cost = CostModel.from_table({(1, 256): 0.040, (2, 256): 0.050})
    h = Harness(cost=cost, config=SchedulerConfig(batch_sizes=(1, 2), kv_buckets=(256,)))
    h.sched.admit([h.job("a", B, length=50, deadline=1e6)], 0.0)
    plan = h.sched.schedule(0.0)
    h.sched.update(plan, StepOutput(tokens={plan.jobs[0]: 1}, seconds=0.5), 0.5)  # prefill: ignored
    assert cost.step_time(1, 256) == pytest.approx(0.040)
    plan = h.sched.schedule(0.5)
    h.sched.update(plan, StepOutput(tokens={plan.jobs[0]: 2}, seconds=0.050), 0.55)
    assert cost.step_time(1, 256) == pytest.approx(0.040 + 0.2 * 0.010)


def test_background_fills_a_padded_batch_when_that_pays():
    # CPU table: 4 rows cost 67 ms, 8 rows 100 ms. Five jobs must not stop at
    # four just because a fifth alone would pad to eight.
    h = Harness(cost=CPU)
    for k in range(6):
        h.sched.admit([h.job(f"u{k}", B, length=30, deadline=1e6)], 0.0)
    plan = h.step()
    assert len(plan.prefill) == 6 and plan.prefill_batch == 8
    plan = h.step()
    assert len(plan.decode) == 6 and plan.batch_size == 8


def test_fill_wait_holds_a_lone_batch_only_while_slack_allows():
    h = Harness(cost=CPU, config=SchedulerConfig(background_fill_wait_s=0.1))
    h.sched.admit([h.job("a", B, length=5, deadline=1e6)], 0.0)
    assert h.sched.schedule(0.0) is None and h.sched.next_wakeup() == pytest.approx(0.1)
    assert not h.sched.idle
    h.sched.admit([h.job("b", B, length=5, deadline=1e6)], 0.05)
    assert h.sched.schedule(0.05) is None
    plan = h.sched.schedule(0.1)
    assert len(plan.prefill) == 2
    # A tight deadline is not held back.
    g = Harness(cost=CPU, config=SchedulerConfig(background_fill_wait_s=0.1))
    g.sched.admit([g.job("c", B, length=5, deadline=2.3)], 0.0)
    assert g.sched.schedule(0.0) is not None


def test_capacity_backstop_bounds_each_lane_and_hints_when_its_queue_moves():
    """The backstop's bound is the lane's own; its retry hint is the time
    until the lane's earliest expected end of work, from now (not from 0)."""
    config = SchedulerConfig(max_queue_background=2, max_queue_interactive=1)
    h = Harness(config=config)
    h.now = now = 50.0
    assert h.sched.admit(h.utterance("a", B, 1, length=10, deadline=1e6), now) is None
    assert h.sched.admit(h.utterance("b", B, 1, length=10, deadline=1e6), now) is None
    ref = h.sched.admit(h.utterance("c", B, 1, deadline=1e6), now)
    assert ref is not None and "background queue is full (2 utterances)" in ref.message
    live = h.sched.forecast.order(h.sched.book.jobs(B).values())
    drain = min(h.sched.forecast.finish_times(live, now).values())
    assert 0 < drain - now < 5.0  # two 10-code jobs on a GPU table
    assert ref.retry_after_s == pytest.approx(max(drain - now, config.retry_after_min_s))

    assert h.sched.admit(h.utterance("i", I, 1, length=10), now) is None
    ref = h.sched.admit(h.utterance("j", I, 1, length=10), now)
    assert ref is not None and "interactive queue is full (1 utterances)" in ref.message
    end = h.sched.capacity.earliest_end(now)
    assert 0 < end - now < 5.0
    assert ref.retry_after_s == pytest.approx(max(end - now, config.retry_after_min_s))
